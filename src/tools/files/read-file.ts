import { z } from "zod";
import { once } from "../../shared/lazy-record.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { defineTool, type ToolContext, type ToolDefinition, type ToolOutput } from "../tool.js";
import { invalidUtf8, PATH_RULES, plural, readsFiles, throwIfAborted, viaWorkspace } from "./common.js";
import { IMAGE_MAX_BYTES, IMAGE_MAX_SIDE, imageFacts, isImagePath, tooLarge } from "./image.js";
import { scanFile } from "./read-file-scan.js";

/** Lines returned when `limit` is omitted, and the largest `limit` accepted. */
export const READ_MAX_LINES = 2000;
/** Most UTF-8 bytes of numbered file text one call returns. */
export const READ_MAX_BYTES = 32 * 1024;
/** Files larger than this are refused: the whole file is hashed and scanned for every read. */
export const READ_MAX_FILE_BYTES = 64 * 1024 * 1024;

const LINE_CUT_MARKER = " … [line cut: too long to show]";

const readFileInput = once(() =>
  z.strictObject({
    path: z.string().min(1).describe(`The file to read. ${PATH_RULES}`),
    offset: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("1-based number of the first line to return. Omit to start at line 1."),
    limit: z
      .number()
      .int()
      .min(1)
      .max(READ_MAX_LINES)
      .optional()
      .describe(`Number of lines to return, at most ${READ_MAX_LINES} (the default).`),
  }),
);

export type ReadFileArgs = z.infer<ReturnType<typeof readFileInput>>;

export function createReadFileTool(): ToolDefinition<ReadFileArgs> {
  return defineTool<ReadFileArgs>({
    ...readsFiles(),
    name: "read_file",
    description: [
      "Read a UTF-8 text file in the workspace. Use it instead of shell commands such as cat, and always",
      "before write_file or edit_file on an existing file: changes are bound to the version you read.",
      "Returns a header with the path, `version: <sha256 hex of the whole file>` and the line range, then",
      `the lines, each prefixed by its line number and a tab (the prefix is not part of the file). At most ${READ_MAX_LINES} lines`,
      `and ${READ_MAX_BYTES / 1024} KiB are returned per call; when more remains the header says so and gives the`,
      "offset to continue with. Line endings are shown as LF; the header notes CRLF files.",
      "Fails with NOT_FOUND, IS_DIRECTORY (use glob to list), INVALID_UTF8 (binary or non-UTF-8 files are",
      "never shown with replacement characters), PATH_ESCAPE/INVALID_PATH/RESERVED_PATH for rejected paths,",
      "and SEMANTIC_VALIDATION_ERROR when offset is past the last line.",
      `A PNG, JPEG, GIF or WebP file (by its name and header) is returned as the image itself, with its size, when`,
      `the model accepts images (otherwise a line says it is not shown); at most ${IMAGE_MAX_BYTES} bytes and ${IMAGE_MAX_SIDE} pixels a side, never resized.`,
    ].join(" "),
    get input() {
      return readFileInput();
    },
    modelSchema: INPUT_SCHEMAS.read_file,
    timeoutMs: 30_000,
    async execute(args, context) {
      const path = await viaWorkspace(() => context.fs.resolve(args.path));
      if (isImagePath(path)) return readImage(path, context);
      // One pass over the file's chunks: hashed, checked as UTF-8 and split on LF as they arrive,
      // only the requested lines kept and decoded, so a large file is never held whole. The size
      // limit is checked as the bytes arrive, which spares every read a separate stat.
      const offset = args.offset ?? 1;
      const limit = args.limit ?? READ_MAX_LINES;
      const scan = await viaWorkspace(() =>
        scanFile(
          context.fs.readChunks(path),
          { offset, limit, budgetBytes: READ_MAX_BYTES, lineCapBytes: READ_MAX_BYTES + 4 },
          (bytesRead) => {
            throwIfAborted(context.signal);
            if (bytesRead > READ_MAX_FILE_BYTES) {
              throw new ToolError(
                "OUTPUT_LIMIT",
                `${path} is larger than ${READ_MAX_FILE_BYTES} bytes; read_file handles text files up to that size (use grep to search it)`,
              );
            }
          },
        ),
      );
      if (scan.invalidUtf8At !== -1) throw invalidUtf8(path, scan.invalidUtf8At);
      const { version, total, lines, crlf } = scan;
      if (offset > Math.max(total, 1)) {
        throw new ToolError(
          "SEMANTIC_VALIDATION_ERROR",
          `offset ${offset} is past the end of ${path}, which has ${plural(total, "line")}`,
          { data: { path, total_lines: total } },
        );
      }
      const window = takeWindow(lines, offset, total, limit);
      const endLine = offset + window.shown.length - 1;
      const more = endLine < total;
      const truncated = more || window.lineCut;

      const header = [`path: ${path}`, `version: ${version}`];
      if (total === 0) {
        header.push("(empty file: 0 lines)");
      } else {
        header.push(`lines ${offset}-${endLine} of ${total}${crlf ? " (CRLF line endings)" : ""}`);
      }
      if (more) {
        header.push(`truncated: ${total - endLine} more lines; continue with offset=${endLine + 1}`);
      } else if (window.lineCut) {
        header.push("truncated: a line was too long to show whole; use grep to search within it");
      }
      const content = [...header, ...window.shown].join("\n");

      return {
        summary: `read ${path} lines ${total === 0 ? "0" : `${offset}-${endLine}`} of ${total}`,
        content,
        data: {
          path,
          version,
          total_lines: total,
          start_line: offset,
          end_line: endLine,
          truncated,
          ...(more ? { next_offset: endLine + 1 } : {}),
        },
      };
    },
  });
}

/**
 * Number the `lines` from `offset`, stopping before the byte budget is exceeded. The first line
 * is always shown (cut if it alone exceeds the budget) so every call makes progress.
 */
function takeWindow(
  lines: readonly string[],
  offset: number,
  total: number,
  limit: number,
): { shown: string[]; lineCut: boolean } {
  const shown: string[] = [];
  const width = String(Math.min(total, offset + limit - 1)).length;
  let used = 0;
  for (const [index, raw] of lines.entries()) {
    const n = offset + index;
    const body = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const numbered = `${String(n).padStart(Math.max(width, 4))}\t${body}`;
    const size = Buffer.byteLength(numbered, "utf8") + 1;
    if (used + size > READ_MAX_BYTES) {
      if (shown.length > 0) return { shown, lineCut: false };
      return { shown: [cutToBytes(numbered, READ_MAX_BYTES - 64) + LINE_CUT_MARKER], lineCut: true };
    }
    shown.push(numbered);
    used += size;
  }
  return { shown, lineCut: false };
}

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes, never splitting a character. */
function cutToBytes(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char, "utf8");
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += char.length;
  }
  return text.slice(0, end);
}

/**
 * An image file: read whole (refused as soon as it passes the byte limit), checked by its header,
 * stored as a session artifact and returned as a reference the model is sent the image by.
 */
async function readImage(path: string, context: ToolContext): Promise<ToolOutput> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  await viaWorkspace(async () => {
    for await (const chunk of context.fs.readChunks(path)) {
      throwIfAborted(context.signal);
      size += chunk.byteLength;
      if (size > IMAGE_MAX_BYTES) throw tooLarge(path, size);
      chunks.push(chunk);
    }
  });
  const bytes = Buffer.concat(chunks);
  const facts = imageFacts(bytes, path);
  const stored = await context.artifacts.put(bytes);
  const kind = facts.media_type.slice("image/".length).toUpperCase();
  return {
    summary: `read image ${path} (${kind} ${facts.width}x${facts.height}, ${bytes.byteLength} bytes)`,
    content: [
      `path: ${path}`,
      `version: ${stored.sha256}`,
      `image: ${kind}, ${facts.width}x${facts.height} pixels, ${bytes.byteLength} bytes (attached below when this model accepts images)`,
    ].join("\n"),
    data: {
      path,
      version: stored.sha256,
      image: {
        artifact: stored.id,
        sha256: stored.sha256,
        media_type: facts.media_type,
        bytes: bytes.byteLength,
        width: facts.width,
        height: facts.height,
      },
    },
  };
}
