import type { ArtifactStore } from "../artifacts/store.js";
import { CodedError } from "../shared/coded-error.js";
import { isDir, isLink, type Manifest } from "../workspace/manifest.js";
import { currentEntry, putEntry, type TreeMode } from "./disk.js";

export class MaterializeError extends CodedError<"CONTENT_UNKNOWN"> {
  override readonly name = "MaterializeError";
}

/**
 * Write `tree` into the directory `into` (which the caller made sure is empty): every directory
 * (empty ones too, for a session that records them), every symlink,
 * and every file with its exact bytes and exec bit. A file's bytes come from the session's
 * artifacts (every content a recorded change replaced is there) or, for one unchanged since, from
 * the recording's kept copies, or the workspace itself when its file still has that hash; otherwise the tree cannot be rebuilt
 * (CONTENT_UNKNOWN, naming the path).
 */
export async function materializeTree(
  tree: Manifest,
  sources: {
    artifacts: ArtifactStore;
    /** The workspace recording's kept copies (its object store), checked against the hash. */
    kept?: (hash: string) => Uint8Array | undefined;
    workspaceRoot: string;
  },
  into: string,
  mode: TreeMode,
): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const [path, entry] of [...tree].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    // Sorted, so a directory is made before anything below it.
    if (isLink(entry) || isDir(entry)) {
      await putEntry(into, path, entry, mode);
      continue;
    }
    let content = (await sources.artifacts.read(entry.hash)) ?? sources.kept?.(entry.hash);
    if (content === undefined) {
      const now = await currentEntry(sources.workspaceRoot, path, mode).catch(() => ({
        entry: null,
        bytes: undefined,
      }));
      if (now.entry === null || !("hash" in now.entry) || now.entry.hash !== entry.hash)
        throw new MaterializeError(
          "CONTENT_UNKNOWN",
          `the content ${path} had then is neither in the session's artifacts nor in the workspace any more (it was changed outside the record)`,
        );
      content = now.bytes;
    }
    await putEntry(into, path, entry, mode, content);
    files++;
    bytes += entry.size;
  }
  return { files, bytes };
}
