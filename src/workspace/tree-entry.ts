import type { Stats } from "node:fs";
import type { OversizeEntry, SpecialEntry, SpecialKind } from "./manifest.js";
import type { Listed } from "./tree-list.js";

/**
 * Largest file whose content the record reads (Node's limit for a whole-file read). A bigger one
 * is recorded by its size alone (`{oversize}`); the record's walk, audit and undo use one limit.
 */
export const RECORD_MAX_BYTES = 2 ** 31 - 1;

/** What a FIFO, socket or device is, from its stat; undefined for a file, link or directory. */
export function specialKind(stats: Stats): SpecialKind | undefined {
  if (stats.isFIFO()) return "fifo";
  if (stats.isSocket()) return "socket";
  if (stats.isCharacterDevice()) return "char_device";
  if (stats.isBlockDevice()) return "block_device";
  return undefined;
}

/**
 * The entry of something the record sees but does not read: a special file by its kind, a regular
 * file over `maxBytes` by its size. Undefined for what is read (a file within the limit, a link,
 * a directory).
 */
export function unreadEntry(
  stats: Stats,
  maxBytes: number = RECORD_MAX_BYTES,
): SpecialEntry | OversizeEntry | undefined {
  const special = specialKind(stats);
  if (special !== undefined) return { special };
  if (stats.isFile() && stats.size > maxBytes)
    return { oversize: true, size: stats.size, exec: (stats.mode & 0o100) !== 0 };
  return undefined;
}

const LISTED_SPECIAL: Partial<Record<Listed["type"], SpecialKind>> = {
  fifo: "fifo",
  socket: "socket",
  char: "char_device",
  block: "block_device",
};

/** `unreadEntry` for an entry of find's listing (tree-list.ts). */
export function listedUnread(
  listed: Listed,
  maxBytes: number = RECORD_MAX_BYTES,
): SpecialEntry | OversizeEntry | undefined {
  const special = LISTED_SPECIAL[listed.type];
  if (special !== undefined) return { special };
  if (listed.type === "file" && listed.size > maxBytes)
    return { oversize: true, size: listed.size, exec: (listed.mode & 0o100) !== 0 };
  return undefined;
}
