import { z } from "zod";
import { once } from "../../shared/lazy-record.js";
import { clipDiff, fileDiff, RECORDED_DIFF_BYTES } from "../../shared/unified-diff.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { defineTool, type ToolDefinition } from "../tool.js";
import {
  assertEncodable,
  bindForChange,
  changesFile,
  commitChange,
  PATH_RULES,
  plural,
  versionField,
} from "./common.js";

const writeFileInput = once(() =>
  z.strictObject({
    path: z
      .string()
      .min(1)
      .describe(`The file to create or replace; missing parent directories are created. ${PATH_RULES}`),
    content: z
      .string()
      .describe(
        "The complete new file content, written as UTF-8 exactly as given. An empty string empties the file.",
      ),
    expected_version: versionField.optional(),
  }),
);

export type WriteFileArgs = z.infer<ReturnType<typeof writeFileInput>>;

export function createWriteFileTool(): ToolDefinition<WriteFileArgs> {
  return defineTool<WriteFileArgs>({
    ...changesFile(),
    name: "write_file",
    description: [
      "Create a new file, or replace the whole content of an existing one, with UTF-8 text. Use it for new",
      "files and full rewrites; for a small change to an existing file prefer edit_file. Parent directories are",
      "created. The write is atomic: readers see the old or the new content, never a mix. An existing file's",
      "permissions are kept. To replace an existing file you must have read it with read_file in this",
      "session, and it must not have changed since. Returns the number of UTF-8 bytes written and the new",
      "`version`. Fails with NOT_READ (existing file not read yet: read it first), STALE_VERSION (the file",
      "changed since you read it, or expected_version does not match: read it again), IS_DIRECTORY, and",
      "PATH_ESCAPE/INVALID_PATH/RESERVED_PATH for rejected paths, PROTECTED_PATH for files the host runs or",
      "obeys (any .git, harness.config.json, hook scripts: readable, never writable). On any failure the file",
      "is unchanged.",
    ].join(" "),
    get input() {
      return writeFileInput();
    },
    modelSchema: INPUT_SCHEMAS.write_file,
    validate(args) {
      assertEncodable(args.content, "content");
    },
    async execute(args, context) {
      assertEncodable(args.content, "content");
      const target = await bindForChange(context, args.path, args.expected_version);
      const { bytes, version } = await commitChange(context, target, args.content);
      const created = target.current === undefined;
      return {
        summary: `${created ? "created" : "wrote"} ${target.path} (${plural(bytes.byteLength, "byte")})`,
        content: [
          `${created ? "Created" : "Wrote"} ${target.path}: ${plural(bytes.byteLength, "UTF-8 byte")}.`,
          `version: ${version}`,
        ].join("\n"),
        data: {
          path: target.path,
          version,
          bytes: bytes.byteLength,
          created,
          // The one diff (shared/unified-diff.ts) of what was written, for every surface to show.
          diff: clipDiff(fileDiff(target.path, target.current ?? null, bytes), RECORDED_DIFF_BYTES),
        },
      };
    },
  });
}
