import type { ArtifactStore } from "../artifacts/store.js";
import { CodedError } from "../shared/coded-error.js";
import { type Entry, isDir, isFile, isLink, isSpecial, type Manifest } from "../workspace/manifest.js";
import { GIT_DIR_NAME } from "../workspace/protected.js";
import { putEntry, type TreeMode } from "./disk.js";
import { recordedContent } from "./history.js";

export class MaterializeError extends CodedError<"CONTENT_UNKNOWN" | "TREE_INCONSISTENT"> {
  override readonly name = "MaterializeError";
}

/** What a materialized tree holds, and what of the record it could not write. */
export interface Materialized {
  files: number;
  bytes: number;
  /**
   * Recorded paths not written: special files (the record holds only their kind) and git
   * metadata below the root (harness never writes a `.git`).
   */
  left_out: string[];
}

/**
 * Whether `tree` can be written out, before anything is: the entries to write in path order (a
 * directory before what is below it) and the ones left out (special files, git metadata below the
 * root). TREE_INCONSISTENT for an entry below a link or a file, CONTENT_UNKNOWN for a file the
 * record holds by its size only.
 */
export function checkTree(tree: Manifest): { wanted: [string, Entry][]; left_out: string[] } {
  const sorted = [...tree].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const left_out: string[] = [];
  const wanted: [string, Entry][] = [];
  for (const [path, entry] of sorted) {
    const parts = path.split("/");
    for (let depth = 1; depth < parts.length; depth++) {
      const above = tree.get(parts.slice(0, depth).join("/"));
      if (above !== undefined && !isDir(above))
        throw new MaterializeError(
          "TREE_INCONSISTENT",
          `the record holds ${JSON.stringify(path)} below ${JSON.stringify(parts.slice(0, depth).join("/"))}, which is not a directory`,
        );
    }
    if (parts.some((p) => p.toLowerCase() === GIT_DIR_NAME) || isSpecial(entry)) {
      left_out.push(path);
      continue;
    }
    if (!isFile(entry) && !isLink(entry) && !isDir(entry))
      throw new MaterializeError(
        "CONTENT_UNKNOWN",
        `the record holds only the size of ${JSON.stringify(path)} (over the size limit), not its content`,
      );
    wanted.push([path, entry]);
  }
  return { wanted, left_out };
}

/**
 * Write `tree` into the directory `into` (which the caller made sure is empty): every directory
 * (empty ones too, for a session that records them), every symlink,
 * and every file with its exact bytes and exec bit. A file's bytes come from the session's
 * artifacts (every content a recorded change replaced is there) or, for one unchanged since, from
 * the recording's kept copies, or the workspace itself when its file still has that hash (read
 * beneath the workspace, never through a link); otherwise the tree cannot be rebuilt
 * (CONTENT_UNKNOWN, naming the path), as for a file the record held only by its size. A tree with
 * an entry below a link or a file (no real directory could hold it) is TREE_INCONSISTENT, found
 * before anything is written; the caller removes what was written when a content is missing.
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
): Promise<Materialized> {
  const { wanted, left_out } = checkTree(tree);
  let files = 0;
  let bytes = 0;
  for (const [path, entry] of wanted) {
    // Sorted, so a directory is made before anything below it.
    if (!isFile(entry)) {
      await putEntry(into, path, entry, mode);
      continue;
    }
    const content = await recordedContent(
      {
        artifacts: sources.artifacts,
        ...(sources.kept ? { kept: sources.kept } : {}),
        root: sources.workspaceRoot,
        mode,
      },
      path,
      entry,
    );
    if (content === undefined)
      throw new MaterializeError(
        "CONTENT_UNKNOWN",
        `the content ${path} had then is neither in the session's artifacts nor in the workspace any more (it was changed outside the record)`,
      );
    await putEntry(into, path, entry, mode, content);
    files++;
    bytes += entry.size;
  }
  return { files, bytes, left_out };
}
