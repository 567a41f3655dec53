import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { sha256Hex } from "../shared/hash.js";
import { readFileBeneath } from "./beneath.js";

/**
 * The last session base taken from find's listing, kept so that the next session's base, when
 * find lists the tree byte for byte as it did then, is that manifest again: no stat cache, no
 * manifest to build, nothing to serialise.
 *
 * A listing holds every entry's path, type, device, inode, mode, size, mtime and ctime (the key the
 * stat cache trusts a hash by), so the same listing is the same tree, on the stat cache's own
 * terms: a process cannot set ctime, and a base is remembered only when nothing in it was hashed
 * within the racy window of its change time (a write in the same clock tick as the listing would
 * keep every listed field) and nothing was left out as unreadable. The key also holds what else a
 * manifest depends on (the root, the excludes, the size limit); the manifest's bytes are read back
 * checked against their SHA-256. A planted or stale key cannot match: the inodes and ctimes a
 * checkout gets cannot be known in advance, and a listing differs as soon as anything changed.
 *
 * Two files beside the stat cache, each replaced whole (temp file and rename): the key, and the
 * manifest's bytes. A reader that sees one from another writer than the other finds the hash
 * differs and takes the ordinary walk.
 */

const KEY_FILE = "tree-base.json";
const MANIFEST_FILE = "tree-base.manifest";
const KEY_VERSION = 1;

/** What the manifest depends on besides the tree. */
export interface BaseScope {
  root: string;
  excludes: readonly string[];
  maxFileBytes: number;
}

export interface BaseKey {
  /** SHA-256 of find's output the base was built from. */
  listing: string;
  /** SHA-256 (the artifact id) of the manifest's canonical bytes. */
  manifest: string;
  /** How many entries the manifest has (what the walk would report). */
  entries: number;
  /** `workspace.base`'s totals for that manifest. */
  files: number;
  bytes: number;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** The remembered key, when it is for this scope and well formed; undefined otherwise. */
export function readBaseKey(stateDir: string, scope: BaseScope): BaseKey | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileBeneath(stateDir, KEY_FILE, 64 * 1024).bytes.toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const key = value as Record<string, unknown>;
  const excludes = key.excludes;
  if (
    key.version !== KEY_VERSION ||
    key.root !== scope.root ||
    key.maxFileBytes !== scope.maxFileBytes ||
    !Array.isArray(excludes) ||
    excludes.length !== scope.excludes.length ||
    excludes.some((pattern, i) => pattern !== scope.excludes[i])
  )
    return undefined;
  const { listing, manifest, entries, files, bytes } = key;
  if (typeof listing !== "string" || !HEX64.test(listing)) return undefined;
  if (typeof manifest !== "string" || !HEX64.test(manifest)) return undefined;
  const counts = [entries, files, bytes];
  if (!counts.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) return undefined;
  return { listing, manifest, entries: entries as number, files: files as number, bytes: bytes as number };
}

/** The remembered manifest's bytes, when they are the ones the key names; undefined otherwise. */
export function readBaseManifest(stateDir: string, key: BaseKey): Uint8Array | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileBeneath(stateDir, MANIFEST_FILE).bytes;
  } catch {
    return undefined;
  }
  return sha256Hex(bytes) === key.manifest ? bytes : undefined;
}

/** Remember a base: its manifest's bytes first, then the key that names them. */
export function writeBase(stateDir: string, scope: BaseScope, key: BaseKey, manifest: Uint8Array): void {
  mkdirSync(stateDir, { recursive: true });
  replaceFile(stateDir, MANIFEST_FILE, manifest);
  const text = JSON.stringify({
    version: KEY_VERSION,
    root: scope.root,
    excludes: scope.excludes,
    maxFileBytes: scope.maxFileBytes,
    ...key,
  });
  replaceFile(stateDir, KEY_FILE, Buffer.from(text, "utf8"));
}

/** Forget the remembered base (its key: the manifest alone is never used). */
export function forgetBase(stateDir: string): void {
  rmSync(path.join(stateDir, KEY_FILE), { force: true });
}

/** Write a file whole under a temporary name, then rename it over the old one (0600). */
function replaceFile(dir: string, name: string, bytes: Uint8Array): void {
  const target = path.join(dir, name);
  const temp = `${target}.${randomBytes(4).toString("hex")}.tmp`;
  const fd = openSync(temp, "wx", 0o600);
  try {
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  renameSync(temp, target);
}
