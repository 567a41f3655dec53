import { z } from "zod";
import { once } from "../../shared/lazy-record.js";
import { clipDiff, RECORDED_DIFF_BYTES, unifiedDiff } from "../../shared/unified-diff.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { defineTool, type ToolDefinition } from "../tool.js";
import {
  assertEncodable,
  bindForChange,
  changesFile,
  commitChange,
  decodeUtf8,
  PATH_RULES,
  plural,
  versionField,
} from "./common.js";
import { whitespaceHint } from "./whitespace-hint.js";

/** Matches whose lines an AMBIGUOUS_MATCH error lists. */
const LISTED_MATCH_LINES = 20;
/** The most of the diff the model reads back (the whole, up to RECORDED_DIFF_BYTES, is in `data.diff`). */
const MODEL_DIFF_BYTES = 4096;

const editFileInput = once(() =>
  z.strictObject({
    path: z.string().min(1).describe(`The existing file to edit. ${PATH_RULES}`),
    old_text: z
      .string()
      .min(1)
      .describe(
        "Exact text to replace, copied from a fresh read_file result without the line-number prefixes. " +
          "It must occur exactly once unless replace_all is true; include surrounding lines to make it unique.",
      ),
    new_text: z.string().describe("Replacement text, inserted literally. An empty string deletes old_text."),
    expected_version: versionField.optional(),
    replace_all: z
      .boolean()
      .optional()
      .describe("Replace every occurrence of old_text instead of requiring exactly one. Default false."),
  }),
);

export type EditFileArgs = z.infer<ReturnType<typeof editFileInput>>;

export function createEditFileTool(): ToolDefinition<EditFileArgs> {
  return defineTool<EditFileArgs>({
    ...changesFile(),
    name: "edit_file",
    description: [
      "Replace exact text in an existing UTF-8 file. Workflow: read_file first, then copy the exact text to",
      "change into old_text (it takes no line numbers, because line numbers shift after every edit). old_text",
      "must occur exactly once, or set replace_all to change every occurrence. The replacement is literal",
      "(no regex, no $ patterns) and every byte outside the match is kept, including line endings and a BOM.",
      "Returns the number of replacements, the bytes written, the new `version` and a short diff.",
      "Fails without changing the file: TEXT_NOT_FOUND (old_text does not occur; the error says where a",
      "near match differs only in whitespace or line endings), AMBIGUOUS_MATCH (several occurrences; lists",
      "their lines), NO_CHANGE (new_text equals old_text), NOT_READ (read the file first), STALE_VERSION",
      "(changed since you read it: read again), NOT_FOUND (use write_file to create files), INVALID_UTF8,",
      "PROTECTED_PATH (any .git, harness.config.json, hook scripts: readable, never writable).",
    ].join(" "),
    get input() {
      return editFileInput();
    },
    modelSchema: INPUT_SCHEMAS.edit_file,
    validate(args) {
      assertEncodable(args.new_text, "new_text");
    },
    async execute(args, context) {
      if (args.old_text === args.new_text) {
        throw new ToolError("NO_CHANGE", "new_text is identical to old_text; nothing to change");
      }
      assertEncodable(args.new_text, "new_text");
      const target = await bindForChange(context, args.path, args.expected_version);
      if (target.current === undefined) {
        throw new ToolError("NOT_FOUND", `${target.path} does not exist; use write_file to create it`, {
          data: { path: target.path },
        });
      }
      const text = decodeUtf8(target.current, target.path);
      const matches = findAll(text, args.old_text, args.old_text.length);
      if (matches.length === 0) throw notFound(target.path, text, args.old_text);
      if (args.replace_all !== true) {
        // Overlapping occurrences ("aa" in "aaa") also make the intended one unclear.
        const occurrences = findAll(text, args.old_text, 1);
        if (occurrences.length > 1) throw ambiguous(target.path, text, occurrences);
      }

      const updated = replaceAt(text, matches, args.old_text.length, args.new_text);
      const { bytes, version } = await commitChange(context, target, updated);
      // The one diff (shared/unified-diff.ts) of what was written, recorded with the result so
      // every surface (chat, report, viewer) shows these bytes.
      const diff = clipDiff(unifiedDiff(target.path, text, updated), RECORDED_DIFF_BYTES);
      return {
        summary: `edited ${target.path} (${plural(matches.length, "replacement")})`,
        content: [
          `Edited ${target.path}: ${plural(matches.length, "replacement")}, ${plural(bytes.byteLength, "UTF-8 byte")} written.`,
          `version: ${version}`,
          clipDiff(diff, MODEL_DIFF_BYTES).trimEnd(),
        ].join("\n"),
        data: { path: target.path, version, bytes: bytes.byteLength, replacements: matches.length, diff },
      };
    },
  });
}

/** Start indexes of occurrences of `needle`, left to right; `step` = needle.length skips overlaps. */
function findAll(text: string, needle: string, step: number): number[] {
  const found: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + step)) found.push(i);
  return found;
}

/** Splice literally; String.replace would expand `$&`, `$1`... in the replacement. */
function replaceAt(text: string, at: readonly number[], length: number, replacement: string): string {
  const pieces: string[] = [];
  let from = 0;
  for (const index of at) {
    pieces.push(text.slice(from, index), replacement);
    from = index + length;
  }
  pieces.push(text.slice(from));
  return pieces.join("");
}

function notFound(path: string, text: string, oldText: string): ToolError {
  const hint = whitespaceHint(text, oldText);
  if (hint === undefined) {
    return new ToolError("TEXT_NOT_FOUND", `old_text does not occur in ${path}; the file is unchanged`, {
      data: { path },
    });
  }
  return new ToolError("TEXT_NOT_FOUND", `old_text does not occur exactly in ${path}: ${hint.message}`, {
    hint: "Copy old_text exactly from a fresh read_file, keeping tabs, trailing spaces and line breaks.",
    data: { path, near_line: hint.startLine, near_end_line: hint.endLine },
  });
}

function ambiguous(path: string, text: string, matches: readonly number[]): ToolError {
  const lines = lineNumbers(text, matches.slice(0, LISTED_MATCH_LINES));
  const more = matches.length > lines.length ? ` (and ${matches.length - lines.length} more)` : "";
  return new ToolError(
    "AMBIGUOUS_MATCH",
    `old_text occurs ${matches.length} times in ${path}, at lines ${lines.join(", ")}${more}; include more ` +
      "surrounding text so it matches once, or set replace_all to true",
    { data: { path, count: matches.length, lines } },
  );
}

/** 1-based line of each (ascending) index, in one pass. */
function lineNumbers(text: string, indexes: readonly number[]): number[] {
  const result: number[] = [];
  let line = 1;
  let scanned = 0;
  for (const index of indexes) {
    for (let i = text.indexOf("\n", scanned); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) {
      line++;
      scanned = i + 1;
    }
    result.push(line);
  }
  return result;
}
