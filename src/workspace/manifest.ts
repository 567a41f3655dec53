import { z } from "zod";
import { canonicalJson, sha256Hex } from "../shared/hash.js";

/**
 * A workspace manifest: every recorded entry of a workspace tree by its relative POSIX path.
 * A regular file is `{hash, size, exec}` (its SHA-256, byte size and whether the owner may execute
 * it); a symbolic link is `{link}` (its target text, never followed); a directory is `{dir: true}`
 * (every one, empty or not, so an undo gives back exactly the directories a point had). A
 * manifest of version 1 (sessions recorded before directories were) has no directory entries:
 * such a session's record, its audit and its undo leave directories out as they always did.
 * The manifest is the session's base (`workspace.base` names it by the artifact id of its
 * canonical JSON); `workspace.changed` records move it forward, and `applyChange` /
 * `diffManifests` are the one place that arithmetic is done.
 *
 * Entries are held in a Map, not an object: a file may be called `__proto__`.
 */

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

export const fileEntrySchema = z.strictObject({
  hash: hex64,
  size: z.number().int().nonnegative(),
  exec: z.boolean(),
});
export const linkEntrySchema = z.strictObject({ link: z.string() });
export const dirEntrySchema = z.strictObject({ dir: z.literal(true) });
/** The kinds of entry that are neither a file, a link nor a directory: only their kind is recorded. */
export const SPECIAL_KINDS = ["fifo", "socket", "char_device", "block_device"] as const;
export type SpecialKind = (typeof SPECIAL_KINDS)[number];
/** A FIFO, socket or device: there, and of this kind; it has no content to record. */
export const specialEntrySchema = z.strictObject({ special: z.enum(SPECIAL_KINDS) });
/**
 * A regular file too large for the record to read: its size and exec bit, never its content. A
 * change that keeps its size is not seen; an undo cannot restore it or tell it is what it was.
 */
export const oversizeEntrySchema = z.strictObject({
  oversize: z.literal(true),
  size: z.number().int().nonnegative(),
  exec: z.boolean(),
});
/** One entry as it appears in a manifest and in `workspace.changed` (`before` / `after`). */
export const entrySchema = z.union([
  fileEntrySchema,
  linkEntrySchema,
  dirEntrySchema,
  specialEntrySchema,
  oversizeEntrySchema,
]);

export type FileEntry = z.infer<typeof fileEntrySchema>;
export type LinkEntry = z.infer<typeof linkEntrySchema>;
export type DirEntry = z.infer<typeof dirEntrySchema>;
export type SpecialEntry = z.infer<typeof specialEntrySchema>;
export type OversizeEntry = z.infer<typeof oversizeEntrySchema>;
export type Entry = FileEntry | LinkEntry | DirEntry | SpecialEntry | OversizeEntry;

/** The one directory entry. */
export const DIR: DirEntry = Object.freeze({ dir: true as const });

/**
 * A recorded path: relative, POSIX separators, no empty, `.` or `..` segment, no NUL. Any other
 * character (newline, leading dash, unicode) is a legal file name and is kept as it is.
 */
export function isManifestPath(path: string): boolean {
  if (path.length === 0 || path.includes("\0")) return false;
  return path.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..");
}

export const manifestPathSchema = z.string().refine(isManifestPath, {
  message: "a relative POSIX path without empty, '.' or '..' segments",
});

/** What one call (or an outside change, or an undo) did to the tree; each list sorted by path. */
export const changeSetSchema = z.object({
  created: z.array(z.object({ path: manifestPathSchema, after: entrySchema })),
  modified: z.array(z.object({ path: manifestPathSchema, before: entrySchema, after: entrySchema })),
  deleted: z.array(z.object({ path: manifestPathSchema, before: entrySchema })),
});
export type ChangeSet = z.infer<typeof changeSetSchema>;

/**
 * Version 2 records directories; version 1 (older sessions) does not. Version 3 is version 2 that
 * also holds entries the record cannot read (special files, files over the size limit): written
 * only when such an entry is present, so every other manifest keeps its version 2 bytes and id.
 */
export const MANIFEST_VERSION = 2;
const MANIFEST_VERSION_WITHOUT_DIRS = 1;
const MANIFEST_VERSION_UNREAD = 3;

/** A tree by path. Read-only in the API: `applyChange` returns a new one. */
export type Manifest = ReadonlyMap<string, Entry>;

export function isLink(entry: Entry): entry is LinkEntry {
  return "link" in entry;
}

export function isDir(entry: Entry): entry is DirEntry {
  return "dir" in entry;
}

export function isSpecial(entry: Entry): entry is SpecialEntry {
  return "special" in entry;
}

export function isOversize(entry: Entry): entry is OversizeEntry {
  return "oversize" in entry;
}

/** An entry whose content the record never held: a special file, or a file over the size limit. */
export function isUnread(entry: Entry): entry is SpecialEntry | OversizeEntry {
  return isSpecial(entry) || isOversize(entry);
}

/** A regular file's entry (neither a link nor a directory). */
export function isFile(entry: Entry): entry is FileEntry {
  return "hash" in entry;
}

export function sameEntry(a: Entry | undefined, b: Entry | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (isDir(a) || isDir(b)) return isDir(a) && isDir(b);
  if (isLink(a) || isLink(b)) return isLink(a) && isLink(b) && a.link === b.link;
  if (isSpecial(a) || isSpecial(b)) return isSpecial(a) && isSpecial(b) && a.special === b.special;
  if (isOversize(a) || isOversize(b))
    return isOversize(a) && isOversize(b) && a.size === b.size && a.exec === b.exec;
  return a.hash === b.hash && a.size === b.size && a.exec === b.exec;
}

/** A manifest read from its stored bytes, and whether its session records directories (version 2). */
export interface StoredManifest {
  tree: Manifest;
  directories: boolean;
}

/** The manifest without its directory entries: what a session recorded before directories were sees. */
export function withoutDirectories(manifest: Manifest): Manifest {
  const files = new Map<string, Entry>();
  for (const [path, entry] of manifest) if (!isDir(entry)) files.set(path, entry);
  return files;
}

/**
 * The change as a session that does not record directories sees it: a directory's side of an entry
 * is nothing (a directory replaced by a file is the file created), and what is then left is kept.
 */
export function changeWithoutDirectories(change: ChangeSet): ChangeSet {
  const kept: ChangeSet = { created: [], modified: [], deleted: [] };
  for (const c of change.created) if (!isDir(c.after)) kept.created.push(c);
  for (const d of change.deleted) if (!isDir(d.before)) kept.deleted.push(d);
  for (const m of change.modified) {
    if (isDir(m.before) && !isDir(m.after)) kept.created.push({ path: m.path, after: m.after });
    else if (!isDir(m.before) && isDir(m.after)) kept.deleted.push({ path: m.path, before: m.before });
    else if (!isDir(m.before)) kept.modified.push(m);
  }
  kept.created.sort(byPath);
  kept.deleted.sort(byPath);
  return kept;
}

/** A manifest, or an inconsistent change, that cannot be read or applied. */
export class ManifestError extends Error {
  override readonly name = "ManifestError";
}

/**
 * Canonical JSON (RFC 8785: keys sorted) of a manifest; its SHA-256 is the manifest's artifact id.
 * `directories: false` writes a version 1 manifest (its directory entries left out).
 */
export function manifestJson(manifest: Manifest, options: { directories?: boolean } = {}): string {
  let text = "";
  const special = writeManifest(manifest, options.directories ?? true, (piece) => {
    text += piece;
  });
  return special ?? text;
}

/**
 * The same bytes as `manifestJson`, UTF-8, built a slice at a time: a 50,000-file base is 8 MB of
 * text, and holding it whole as a string beside its encoding doubled what a run's start peaked at.
 */
export function manifestBytes(manifest: Manifest, options: { directories?: boolean } = {}): Uint8Array {
  const chunks: Buffer[] = [];
  let pending = "";
  let total = 0;
  const flush = (): void => {
    const chunk = Buffer.from(pending, "utf8");
    chunks.push(chunk);
    total += chunk.length;
    pending = "";
  };
  const special = writeManifest(manifest, options.directories ?? true, (piece) => {
    pending += piece;
    if (pending.length >= 64 * 1024) flush();
  });
  if (special !== undefined) return new TextEncoder().encode(special);
  flush();
  return Buffer.concat(chunks, total);
}

/**
 * A manifest's canonical text, handed to `write` piece by piece; returns the whole text instead
 * (having written nothing to rely on) in the rare case the generic walk must decide.
 *
 * Written entry by entry rather than through a generic canonical walk: a 50,000-file base took
 * about a second that way (an object of every entry, its sorted copy, then the text) at every
 * session's start. Each entry's keys are written in their canonical order; paths are sorted by
 * UTF-16 code units (Array.prototype.sort's default, the order RFC 8785 asks for), and strings and
 * numbers are JSON.stringify's text, as RFC 8785 specifies; the version, the last key, is written
 * once every entry is known. test/workspace/manifest.test.ts compares the result with canonicalJson.
 */
function writeManifest(
  manifest: Manifest,
  directories: boolean,
  write: (piece: string) => void,
): string | undefined {
  const paths = [...manifest.keys()].sort();
  let unread = false;
  let first = true;
  write('{"entries":{');
  for (const path of paths) {
    const entry = manifest.get(path) as Entry;
    let text: string;
    if (isDir(entry)) {
      if (!directories) continue;
      text = '{"dir":true}';
    } else if (isLink(entry)) text = `{"link":${JSON.stringify(entry.link)}}`;
    else if (isSpecial(entry)) {
      text = `{"special":${JSON.stringify(entry.special)}}`;
      unread = true;
    } else if (isOversize(entry)) {
      text = `{"exec":${entry.exec === true},"oversize":true,"size":${number(entry.size)}}`;
      unread = true;
    } else
      text = `{"exec":${entry.exec === true},"hash":${JSON.stringify(entry.hash)},"size":${number(entry.size)}}`;
    const piece = `${first ? "" : ","}${JSON.stringify(path)}:${text}`;
    // A lone surrogate (a path no walk produces, but a change record could carry) has no canonical
    // form, and a name holding a backslash before "ud" looks like one here: the generic walk decides.
    if (piece.includes("\\ud")) return genericManifestJson(manifest, directories);
    write(piece);
    first = false;
  }
  // Entries the record could not read exist only in manifests that record directories.
  const version = unread
    ? MANIFEST_VERSION_UNREAD
    : directories
      ? MANIFEST_VERSION
      : MANIFEST_VERSION_WITHOUT_DIRS;
  write(`},"version":${version}}`);
  return undefined;
}

/** The canonical text through the generic RFC 8785 walk (the reference; slow on large manifests). */
function genericManifestJson(manifest: Manifest, directories: boolean): string {
  const entries: Record<string, Entry> = Object.create(null) as Record<string, Entry>;
  let unread = false;
  for (const [path, entry] of manifest) {
    if (isDir(entry)) {
      if (directories) entries[path] = { dir: true };
    } else if (isLink(entry)) entries[path] = { link: entry.link };
    else if (isSpecial(entry)) {
      entries[path] = { special: entry.special };
      unread = true;
    } else if (isOversize(entry)) {
      entries[path] = { oversize: true, size: entry.size, exec: entry.exec };
      unread = true;
    } else entries[path] = { hash: entry.hash, size: entry.size, exec: entry.exec };
  }
  const version = unread
    ? MANIFEST_VERSION_UNREAD
    : directories
      ? MANIFEST_VERSION
      : MANIFEST_VERSION_WITHOUT_DIRS;
  return canonicalJson({ version, entries });
}

/** A size as canonical JSON writes it (sizes are non-negative integers; anything else is refused). */
function number(value: number): string {
  if (!Number.isFinite(value)) throw new TypeError(`${value} has no canonical JSON form`);
  return JSON.stringify(value);
}

/** The artifact id the manifest's canonical bytes are stored under. */
export function manifestId(manifest: Manifest, options: { directories?: boolean } = {}): string {
  return sha256Hex(manifestBytes(manifest, options));
}

const manifestShape = z.strictObject({
  version: z.union([
    z.literal(MANIFEST_VERSION_WITHOUT_DIRS),
    z.literal(MANIFEST_VERSION),
    z.literal(MANIFEST_VERSION_UNREAD),
  ]),
  entries: z.custom<Record<string, unknown>>(
    (value) => typeof value === "object" && value !== null && !Array.isArray(value),
    { message: "an object of entries" },
  ),
});

/**
 * A manifest from its stored bytes (external input: an artifact on disk). Throws ManifestError
 * naming the first problem.
 */
export function parseManifest(data: string | Uint8Array): Manifest {
  return readManifest(data).tree;
}

/** A manifest from its stored bytes, with whether it records directories (see parseManifest). */
export function readManifest(data: string | Uint8Array): StoredManifest {
  let text: string;
  try {
    text = typeof data === "string" ? data : new TextDecoder("utf-8", { fatal: true }).decode(data);
  } catch {
    throw new ManifestError("manifest is not UTF-8 text");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ManifestError("manifest is not JSON");
  }
  const shape = manifestShape.safeParse(value);
  if (!shape.success) {
    throw new ManifestError(
      `manifest is not {"version":1, 2 or 3,"entries":{...}}: ${shape.error.issues[0]?.message ?? ""}`,
    );
  }
  const directories = shape.data.version !== MANIFEST_VERSION_WITHOUT_DIRS;
  const unread = shape.data.version === MANIFEST_VERSION_UNREAD;
  const manifest = new Map<string, Entry>();
  // Object.entries reads own properties only, so a path named "__proto__" is an ordinary key.
  for (const [path, raw] of Object.entries(shape.data.entries)) {
    if (!isManifestPath(path))
      throw new ManifestError(`manifest path ${JSON.stringify(path)} is not a relative path`);
    const entry = entrySchema.safeParse(raw);
    if (!entry.success || (!directories && isDir(entry.data)) || (!unread && isUnread(entry.data)))
      throw new ManifestError(
        `manifest entry ${JSON.stringify(path)} is not {hash,size,exec}, {link}${directories ? " or {dir}" : ""}${unread ? ", {special} or {oversize,size,exec}" : ""}`,
      );
    manifest.set(path, entry.data);
  }
  return { tree: manifest, directories };
}

/** Where a change does not fit the manifest it is applied to. */
export interface ChangeMismatch {
  path: string;
  reason: "created_exists" | "before_differs" | "missing";
}

/** Every place `change` disagrees with `manifest` (empty: it applies cleanly). */
export function checkChange(manifest: Manifest, change: ChangeSet): ChangeMismatch[] {
  const mismatches: ChangeMismatch[] = [];
  for (const { path } of change.created) {
    if (manifest.has(path)) mismatches.push({ path, reason: "created_exists" });
  }
  for (const { path, before } of [...change.modified, ...change.deleted]) {
    const current = manifest.get(path);
    if (current === undefined) mismatches.push({ path, reason: "missing" });
    else if (!sameEntry(current, before)) mismatches.push({ path, reason: "before_differs" });
  }
  return mismatches;
}

/**
 * The manifest after `change`. Strict by default: a created path that exists, or a `before` that
 * is not the current entry, is a ManifestError (a journal whose records do not chain). With
 * `{ strict: false }` the change's `after` side wins regardless.
 */
export function applyChange(
  manifest: Manifest,
  change: ChangeSet,
  options: { strict?: boolean } = {},
): Manifest {
  if (options.strict !== false) {
    const [first] = checkChange(manifest, change);
    if (first !== undefined) {
      throw new ManifestError(`change does not apply at ${JSON.stringify(first.path)}: ${first.reason}`);
    }
  }
  const next = new Map(manifest);
  for (const { path } of change.deleted) next.delete(path);
  for (const { path, after } of change.modified) next.set(path, after);
  for (const { path, after } of change.created) next.set(path, after);
  return next;
}

/** Entries of a change in path order (UTF-16 code units). */
export const byPath = (a: { path: string }, b: { path: string }): number =>
  a.path < b.path ? -1 : a.path > b.path ? 1 : 0;

/**
 * What turns `before` into `after`, each list sorted by path. `paths`: only these can differ (the
 * rest is known to be equal), so only they are compared.
 */
export function diffManifests(before: Manifest, after: Manifest, paths?: Iterable<string>): ChangeSet {
  const change: ChangeSet = { created: [], modified: [], deleted: [] };
  const compare = (path: string): void => {
    const old = before.get(path);
    const entry = after.get(path);
    if (entry === undefined) {
      if (old !== undefined) change.deleted.push({ path, before: old });
    } else if (old === undefined) change.created.push({ path, after: entry });
    else if (!sameEntry(old, entry)) change.modified.push({ path, before: old, after: entry });
  };
  if (paths !== undefined) for (const path of new Set(paths)) compare(path);
  else {
    for (const path of after.keys()) compare(path);
    for (const path of before.keys()) if (!after.has(path)) compare(path);
  }
  change.created.sort(byPath);
  change.modified.sort(byPath);
  change.deleted.sort(byPath);
  return change;
}

export function isEmptyChange(change: ChangeSet): boolean {
  return change.created.length === 0 && change.modified.length === 0 && change.deleted.length === 0;
}

/** Content ids a change needs kept to be undone: every `before` file's hash. */
export function beforeHashes(change: ChangeSet): string[] {
  const hashes = new Set<string>();
  for (const { before } of [...change.modified, ...change.deleted])
    if (isFile(before)) hashes.add(before.hash);
  return [...hashes].sort();
}

/** Totals of a manifest's regular files whose content the record holds, for `workspace.base`. */
export function manifestTotals(manifest: Manifest): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const entry of manifest.values()) {
    if (!isFile(entry)) continue;
    files += 1;
    bytes += entry.size;
  }
  return { files, bytes };
}
