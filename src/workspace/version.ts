import { sha256Hex } from "../shared/hash.js";

/** A file's version: SHA-256 of its whole byte content, lower-case hex. */
export function versionOf(bytes: Uint8Array): string {
  return sha256Hex(bytes);
}
