import { isUtf8 } from "node:buffer";

/**
 * What grep treats as searchable text, shared by the walk (for `.gitignore` files), the matcher
 * workers (whose source repeats these two rules, see worker-source.ts) and the tool's description.
 */

/** A NUL byte this early marks a file as binary (as git and ripgrep do). */
export const BINARY_SNIFF_BYTES = 8 * 1024;
/** Larger files are not searched: grep reads each file whole. */
export const GREP_MAX_FILE_BYTES = 8 * 1024 * 1024;

/** Not binary (no NUL in the first 8 KiB) and valid UTF-8. */
export function looksLikeText(bytes: Uint8Array): boolean {
  return !bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0) && isUtf8(bytes);
}
