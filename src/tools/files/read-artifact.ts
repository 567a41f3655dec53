import { z } from "zod";
import { ArtifactCorruptError } from "../../artifacts/store.js";
import { once } from "../../shared/lazy-record.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { defineTool, type ToolContext, type ToolDefinition } from "../tool.js";
import { FILE_TOOL_VERSION, isValidUtf8 } from "./common.js";

export const ARTIFACT_DEFAULT_BYTES = 16 * 1024;
export const ARTIFACT_MAX_BYTES = 64 * 1024;

const readArtifactInput = once(() =>
  z.strictObject({
    id: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "must be 64 lower-case hex digits")
      .describe("Artifact id (SHA-256 hex) exactly as given in an earlier tool result."),
    offset: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("Byte offset to start at; default 0. Use next_offset from the previous chunk to continue."),
    length: z
      .number()
      .int()
      .min(1)
      .max(ARTIFACT_MAX_BYTES)
      .optional()
      .describe(`Number of bytes to read; default ${ARTIFACT_DEFAULT_BYTES}, at most ${ARTIFACT_MAX_BYTES}.`),
  }),
);

export type ReadArtifactArgs = z.infer<ReturnType<typeof readArtifactInput>>;

export function createReadArtifactTool(): ToolDefinition<ReadArtifactArgs> {
  return defineTool<ReadArtifactArgs>({
    name: "read_artifact",
    version: FILE_TOOL_VERSION,
    description: [
      "Read part of a stored artifact: the full output of an earlier tool call that was too large to show",
      "inline (the earlier result names its artifact id and size). Reads a byte range as text; the range is",
      "moved to whole UTF-8 characters, so a character is never split. Returns a header with the range and",
      "total size and, when more remains, the offset to continue with, followed by the text. Invalid UTF-8",
      "bytes, if any, are shown as U+FFFD and the header says so. Fails with ARTIFACT_NOT_FOUND for an",
      "unknown id, SEMANTIC_VALIDATION_ERROR for an offset past the end, and POLICY_DENIED when the artifact",
      "holds a file that the policy does not (or no longer without approval) let read_file read.",
    ].join(" "),
    get input() {
      return readArtifactInput();
    },
    modelSchema: INPUT_SCHEMAS.read_artifact,
    effect: "read_only",
    idempotency: "pure",
    timeoutMs: 10_000,
    resources: (args) => ({ read: [`artifact:${args.id}`], write: [] }),
    concurrencySafe: () => true,
    async execute(args, context) {
      await checkSources(args.id, context);
      const bytes = await readChecked(args.id, context);
      if (bytes === undefined) {
        throw new ToolError("ARTIFACT_NOT_FOUND", `no artifact with id ${args.id} in this session`, {
          data: { id: args.id },
        });
      }
      const total = bytes.byteLength;
      const requested = args.offset ?? 0;
      if (requested > total) {
        throw new ToolError(
          "SEMANTIC_VALIDATION_ERROR",
          `offset ${requested} is past the end of the artifact (${total} bytes)`,
          { data: { id: args.id, total_bytes: total } },
        );
      }
      const { start, end } = snapRange(bytes, requested, args.length ?? ARTIFACT_DEFAULT_BYTES);
      const chunk = bytes.subarray(start, end);
      const lossy = !isValidUtf8(chunk);
      const text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(chunk);
      const more = end < total;
      const header = [
        `artifact: ${args.id}`,
        `bytes ${start}-${end} of ${total}${more ? `; continue with offset=${end}` : " (end)"}`,
      ];
      if (lossy) header.push("note: this range is not valid UTF-8; invalid bytes are shown as U+FFFD");
      return {
        summary: `read artifact ${args.id.slice(0, 12)} bytes ${start}-${end} of ${total}`,
        content: `${header.join("\n")}\n\n${text}`,
        data: {
          id: args.id,
          offset: start,
          length: end - start,
          total_bytes: total,
          ...(more ? { next_offset: end } : {}),
          ...(lossy ? { lossy: true } : {}),
        },
      };
    },
  });
}

/**
 * An artifact that holds a file's content is that file to the policy: it is read only while
 * read_file may read the file (allowed, or approved for the session), so a stored result cannot
 * carry a file's content past a rule.
 */
async function checkSources(id: string, context: ToolContext): Promise<void> {
  const access = context.readAccess;
  if (access === undefined) return;
  for (const path of context.artifactSources?.(id) ?? []) {
    const decision = await access(path);
    if (decision === "allowed") continue;
    throw new ToolError(
      "POLICY_DENIED",
      decision === "ask"
        ? `artifact ${id} holds the content of ${path}, and reading ${path} needs an approval that has not been given for this session`
        : `artifact ${id} holds the content of ${path}, which the policy does not let read_file read`,
      { data: { id, path } },
    );
  }
}

/**
 * Snap [offset, offset + length) to UTF-8 character boundaries: the start moves back to the
 * beginning of the character it falls in (nothing is skipped), the end moves back so no character
 * is cut; if that would leave nothing, the end moves forward over one whole character.
 */
export function snapRange(bytes: Uint8Array, offset: number, length: number): { start: number; end: number } {
  const total = bytes.byteLength;
  let start = Math.min(offset, total);
  while (start > 0 && start > offset - 3 && isContinuation(bytes[start])) start--;
  let end = Math.min(start + length, total);
  let cut = end;
  while (cut > start && cut > end - 3 && isContinuation(bytes[cut])) cut--;
  if (cut > start) {
    end = cut;
  } else {
    // Bounded so that bytes that are not UTF-8 at all cannot stretch the range.
    while (end < total && end < start + 4 && isContinuation(bytes[end])) end++;
  }
  return { start, end };
}

function isContinuation(byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80;
}

/** A stored artifact whose bytes no longer match their name is a tool failure, not a crash. */
async function readChecked(id: string, context: ToolContext): Promise<Uint8Array | undefined> {
  try {
    return await context.artifacts.read(id);
  } catch (error) {
    if (error instanceof ArtifactCorruptError)
      throw new ToolError("ARTIFACT_CORRUPT", error.message, { data: { id } });
    throw error;
  }
}
