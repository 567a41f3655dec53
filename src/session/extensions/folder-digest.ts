import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../shared/hash.js";

/**
 * The digest of a folder as approved: every entry beneath it by relative path, a file by the
 * SHA-256 of its content, a symbolic link by its target text (never followed: a link cannot
 * smuggle a file from elsewhere into what was approved). A script added or edited anywhere in a
 * skill changes its digest, so the approval asks again.
 */

/** Most entries and bytes one folder may hold: a skill is a few files, not a repository. */
export const FOLDER_MAX_ENTRIES = 1000;
export const FOLDER_MAX_BYTES = 20 * 1024 * 1024;

export class FolderTooLarge extends Error {
  override readonly name = "FolderTooLarge";
}

export interface FolderDigest {
  digest: string;
  /** Relative paths of the files in it, sorted. */
  files: string[];
  /** The bytes of the file `keep` named, exactly as hashed (absent when it is not a file there). */
  kept?: Buffer;
}

/**
 * `keep` names a file whose bytes the caller uses (a skill's SKILL.md): it gets the very bytes
 * that were hashed, so what is shown to the model is what the approval's digest covers, never a
 * second read a writer could have swapped in between.
 */
export function folderDigest(root: string, keep?: string): FolderDigest {
  const lines: string[] = [];
  const files: string[] = [];
  let kept: Buffer | undefined;
  let bytes = 0;
  const walk = (relative: string) => {
    const names = readdirSync(join(root, relative)).sort();
    for (const name of names) {
      const path = relative === "" ? name : `${relative}/${name}`;
      if (lines.length >= FOLDER_MAX_ENTRIES)
        throw new FolderTooLarge(`more than ${FOLDER_MAX_ENTRIES} entries`);
      const stat = lstatSync(join(root, path));
      if (stat.isSymbolicLink())
        lines.push(`link ${JSON.stringify(path)} ${JSON.stringify(readlinkSync(join(root, path)))}`);
      else if (stat.isDirectory()) {
        lines.push(`dir ${JSON.stringify(path)}`);
        walk(path);
      } else if (stat.isFile()) {
        bytes += stat.size;
        if (bytes > FOLDER_MAX_BYTES) throw new FolderTooLarge(`more than ${FOLDER_MAX_BYTES} bytes`);
        const content = readFileSync(join(root, path));
        if (path === keep) kept = content;
        lines.push(`file ${JSON.stringify(path)} ${sha256Hex(content)}`);
        files.push(path);
      } else lines.push(`other ${JSON.stringify(path)}`);
    }
  };
  walk("");
  return { digest: sha256Hex(lines.join("\n")), files, ...(kept !== undefined ? { kept } : {}) };
}
