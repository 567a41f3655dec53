import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { compareCodeUnits } from "./order.js";

/**
 * The workspace tree listed by GNU find in one process: every entry's type and stat (device,
 * inode, mode, size, mtime and ctime in nanoseconds), NUL-separated, so a name holding a newline
 * or any byte but NUL is read as it is. A walk in JavaScript makes a readdir and an lstat call per
 * entry, each with its own objects; on a 50,000-file tree that is most of a run's start. find does
 * the same system calls in C, on the other core, while the event loop waits for its output.
 *
 * It only lists: nothing is read through what it names. find never follows a symbolic link
 * (`-P`), and the record reads a file only through held directories (beneath.ts), after its stat
 * here did not match what was hashed before. A listing is a hint in the same sense as
 * `HeldDir.statHint`: a file is trusted unchanged only when device, inode, ctime, size, mtime
 * and mode all match its cached stat, so the same file, however it was reached.
 *
 * Undefined whenever the listing is not certain to be whole: find missing (or not GNU), any
 * message on its standard error (an unreadable directory, a name that vanished while listed), a
 * status other than 0, a line not of the expected shape. The caller then walks in JavaScript,
 * which treats each of those cases itself.
 */

export type ListedType = "file" | "dir" | "link" | "fifo" | "socket" | "char" | "block";

/** One entry as find saw it; the fields Stats has, with Stats's meaning. */
export interface Listed {
  /** Workspace-relative path; non-UTF-8 bytes decode to U+FFFD (as readdir's names do). */
  rel: string;
  type: ListedType;
  dev: number;
  ino: number;
  /** File type bits and permission bits, as `Stats.mode`. */
  mode: number;
  size: number;
  /** As `Stats.mtimeMs`: seconds * 1000 + nanoseconds / 1e6, computed as Node computes it. */
  mtimeMs: number;
  ctimeMs: number;
}

/** Fixed system paths only: a `find` on PATH may lie inside the workspace (the model's program). */
const FIND_PATHS = ["/usr/bin/find", "/bin/find"];

const TYPES: Record<string, { type: ListedType; bits: number }> = {
  f: { type: "file", bits: 0o100000 },
  d: { type: "dir", bits: 0o040000 },
  l: { type: "link", bits: 0o120000 },
  p: { type: "fifo", bits: 0o010000 },
  s: { type: "socket", bits: 0o140000 },
  c: { type: "char", bits: 0o020000 },
  b: { type: "block", bits: 0o060000 },
};

/** type, device, inode, permission bits (octal), size, mtime, ctime, path; NUL-terminated. */
const FORMAT = "%y %D %i %m %s %T@ %C@ %P\\0";
/** The second find's records: the path with its start point, a plain top-level name (`DIR/...`). */
const BELOW_FORMAT = "%y %D %i %m %s %T@ %C@ %p\\0";
/** What the second find prints for each start point: no record of find's shape starts so. */
const MARK = "//\\0";

let findPath: string | null | undefined;

function locateFind(): string | undefined {
  if (findPath === undefined)
    findPath = process.platform === "linux" ? (FIND_PATHS.find((p) => existsSync(p)) ?? null) : null;
  return findPath ?? undefined;
}

/**
 * Every entry below the root (held open as `rootFd`; `root` its real absolute path) except the root's `.git` and `.harness`
 * (never recorded: not listed at all, however large), in find's order: a directory before what
 * it holds, its contents contiguous.
 */
export async function listTree(rootFd: number, root: string): Promise<Listed[] | undefined> {
  const output = await readListing(rootFd, root);
  return output === undefined ? undefined : parseListing(output);
}

/**
 * find's output for `listTree`, unparsed (see `forEachListed`). With two or more top-level
 * directories, two finds list the tree at once, on two cores (find's time is an lstat per entry):
 * one lists the root and half of its directories, the other what lies below the second half,
 * and that is spliced in after each directory's own line, so the output is byte for byte what
 * one find prints (a remembered base's listing still matches).
 */
export async function readListing(rootFd: number, root: string): Promise<Buffer | undefined> {
  const find = locateFind();
  if (find === undefined) return undefined;
  // find starts in the directory held open (the kernel follows the parent's descriptor), not
  // wherever the root's path leads by the time it starts.
  const held = `/proc/${process.pid}/fd/${rootFd}`;
  const cwd = existsSync(held) ? held : root;
  const second = secondHalf(cwd);
  const pruned = ["(", "-path", "./.git", "-o", "-path", "./.harness", ")", "-prune", "-o"];
  if (second.length === 0)
    return runFind(find, cwd, ["-P", ".", "-mindepth", "1", ...pruned, "-printf", FORMAT]);
  const named = second.flatMap((dir, i) => [...(i === 0 ? [] : ["-o"]), "-path", `./${dir}`]);
  const [first, below] = await Promise.all([
    runFind(find, cwd, [
      "-P",
      ".",
      "-mindepth",
      "1",
      ...pruned,
      // The second half's directories: their own line, nothing below them.
      "(",
      ...named,
      ")",
      "-prune",
      "-printf",
      FORMAT,
      "-o",
      "-printf",
      FORMAT,
    ]),
    // Each start point (a plain name: printed as the first find prints paths) opens with a mark.
    runFind(find, cwd, [
      "-P",
      ...second,
      "(",
      ...named.map((arg) => (arg.startsWith("./") ? arg.slice(2) : arg)),
      ")",
      "-printf",
      MARK,
      "-o",
      "-printf",
      BELOW_FORMAT,
    ]),
  ]);
  return first === undefined || below === undefined ? undefined : splice(first, below, second);
}

/**
 * Every second top-level directory (in code-unit order) whose name needs no quoting as a find
 * start point or `-path` pattern; none when fewer than two directories have such names (one find
 * lists it all). A directory with any other name is listed by the first find, whole.
 */
function secondHalf(cwd: string): string[] {
  let names: string[];
  try {
    names = readdirSync(cwd, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && PLAIN_NAME.test(entry.name))
      .map((entry) => entry.name)
      .filter((name) => name !== "." && name !== ".." && name !== ".git" && name !== ".harness")
      .sort(compareCodeUnits);
  } catch {
    return [];
  }
  return names.length < 2 ? [] : names.filter((_, i) => i % 2 === 1);
}

/** A name find takes as written: no glob character, no leading dash, nothing to quote. */
const PLAIN_NAME = /^[A-Za-z0-9_.][A-Za-z0-9_.@+=,-]*$/;

/**
 * The first find's output with each second-half directory's records (the second find's, between
 * its marks) right after that directory's own line; undefined when the two do not fit together
 * (a directory gone or come meanwhile): the caller then walks. Only the few directory lines and
 * marks are looked for: the records themselves are copied as they are.
 */
function splice(first: Buffer, below: Buffer, dirs: readonly string[]): Buffer | undefined {
  const mark = Buffer.from("//\0");
  // The second find's output: a mark, that directory's records, the next mark...
  const starts: number[] = [];
  for (let at = 0; at < below.length; ) {
    if (!below.subarray(at, at + mark.length).equals(mark)) return undefined;
    starts.push(at + mark.length);
    const next = below.indexOf(mark, at + mark.length);
    // A mark only counts at a record's start (after a NUL); "//" is no path's ending.
    at = next === -1 ? below.length : next;
  }
  if (starts.length !== dirs.length) return undefined;
  // Each directory's own line, in the first find's (directory) order.
  const lines: Array<{ line: number; index: number }> = [];
  for (const [index, dir] of dirs.entries()) {
    const line = ownLine(first, dir);
    if (line === undefined) return undefined;
    lines.push({ line, index });
  }
  lines.sort((a, b) => a.line - b.line);
  const out: Buffer[] = [];
  let from = 0;
  for (const { line, index } of lines) {
    const start = starts[index] as number;
    const end = index + 1 < starts.length ? (starts[index + 1] as number) - mark.length : below.length;
    out.push(first.subarray(from, line), below.subarray(start, end));
    from = line;
  }
  out.push(first.subarray(from));
  return Buffer.concat(out);
}

/** The end of a top-level directory's own record in the first find's output. */
function ownLine(output: Buffer, dir: string): number | undefined {
  const tail = Buffer.from(` ${dir}\0`);
  for (let at = output.indexOf(tail); at !== -1; at = output.indexOf(tail, at + 1)) {
    const start = output.lastIndexOf(0, at) + 1;
    if (output[start] === TYPE_DIR && pathStart(output, start, at + tail.length - 1) === at + 1)
      return at + tail.length;
  }
  return undefined;
}

/** Where a record's path begins: after its seven fields and their spaces (none holds a space). */
function pathStart(output: Buffer, at: number, end: number): number | undefined {
  let spaces = 0;
  for (let i = at; i < end; i++) {
    if (output[i] === SPACE && ++spaces === 7) return i + 1;
  }
  return undefined;
}

function runFind(find: string, root: string, args: readonly string[]): Promise<Buffer | undefined> {
  // find writes to a file, not a pipe: a pipe holds 64 KiB, and a listing of a large tree is
  // megabytes, so find would wait on this thread to read each piece, and this thread is busy
  // (loading a command, reading the stat cache) while find runs. The file is unlinked at once:
  // nothing is left behind, and only this process and find hold it.
  let out: number;
  try {
    const name = path.join(tmpdir(), `harness-listing-${process.pid}-${randomBytes(6).toString("hex")}`);
    out = openSync(name, "wx+", 0o600);
    unlinkSync(name);
  } catch {
    return Promise.resolve(undefined);
  }
  return new Promise<Buffer | undefined>((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(
        find,
        args,
        // The C locale: no translation of messages or names; no inherited variable changes find.
        { cwd: root, env: { LC_ALL: "C", PATH: "/usr/bin:/bin" }, stdio: ["ignore", out, "pipe"] },
      );
    } catch {
      resolve(undefined);
      return;
    }
    let complained = false;
    child.stderr?.on("data", () => {
      complained = true;
    });
    child.on("error", () => resolve(undefined));
    child.on("close", (code) => {
      resolve(code === 0 && !complained ? readWhole(out) : undefined);
    });
  }).finally(() => closeSync(out));
}

/** Everything written to the descriptor, from its start. */
function readWhole(fd: number): Buffer | undefined {
  try {
    const size = fstatSync(fd).size;
    const bytes = Buffer.allocUnsafe(size);
    let at = 0;
    while (at < size) {
      const read = readSync(fd, bytes, at, size - at, at);
      if (read === 0) return undefined;
      at += read;
    }
    return bytes;
  } catch {
    return undefined;
  }
}

const SPACE = 0x20;
const DOT = 0x2e;
const TYPE_DIR = 0x64;
const ZERO = 0x30;

const TYPE_BY_BYTE = new Map<number, { type: ListedType; bits: number }>(
  Object.entries(TYPES).map(([letter, kind]) => [letter.charCodeAt(0), kind]),
);

/**
 * find's records; undefined when any is not of the expected shape. Numbers are read from the
 * bytes (a string per field of 50,000 records was most of the parse).
 */
export function parseListing(output: Buffer): Listed[] | undefined {
  const entries: Listed[] = [];
  return forEachListed(output, (entry) => entries.push({ ...entry })) ? entries : undefined;
}

/**
 * Each record of find's output to `visit`, in order, as one object reused from record to record
 * (an object per entry of a large tree is megabytes held at once); false at the first record not
 * of the expected shape (what was visited before it must then be discarded).
 */
export function forEachListed(output: Buffer, visit: (entry: Readonly<Listed>) => void): boolean {
  const entry: Listed = { rel: "", type: "file", dev: 0, ino: 0, mode: 0, size: 0, mtimeMs: 0, ctimeMs: 0 };
  const cursor = { at: 0 };
  while (cursor.at < output.length) {
    const kind = TYPE_BY_BYTE.get(output[cursor.at] as number);
    if (kind === undefined || output[cursor.at + 1] !== SPACE) return false;
    cursor.at += 2;
    const dev = integer(output, cursor, 10);
    const ino = integer(output, cursor, 10);
    const perm = integer(output, cursor, 8);
    const size = integer(output, cursor, 10);
    const mtimeMs = time(output, cursor);
    const ctimeMs = time(output, cursor);
    if (
      dev === undefined ||
      ino === undefined ||
      perm === undefined ||
      perm > 0o7777 ||
      size === undefined ||
      mtimeMs === undefined ||
      ctimeMs === undefined
    )
      return false;
    const end = output.indexOf(0, cursor.at);
    if (end === -1 || end === cursor.at) return false;
    const rel = output.toString("utf8", cursor.at, end);
    if (rel.startsWith("/")) return false;
    cursor.at = end + 1;
    entry.rel = rel;
    entry.type = kind.type;
    entry.dev = dev;
    entry.ino = ino;
    entry.mode = kind.bits | perm;
    entry.size = size;
    entry.mtimeMs = mtimeMs;
    entry.ctimeMs = ctimeMs;
    visit(entry);
  }
  return true;
}

/**
 * Digits up to a space (consumed). Past 15 digits the text is converted as a whole, which rounds
 * to the nearest double as the stat call's conversion does (an inode number over 2^53).
 */
function integer(output: Buffer, cursor: { at: number }, radix: 8 | 10): number | undefined {
  const start = cursor.at;
  let value = 0;
  for (;;) {
    const byte = output[cursor.at] as number | undefined;
    if (byte === SPACE) break;
    const digit = (byte ?? -1) - ZERO;
    if (digit < 0 || digit >= radix) return undefined;
    value = value * radix + digit;
    cursor.at++;
  }
  const digits = cursor.at - start;
  cursor.at++;
  if (digits === 0) return undefined;
  if (digits > 15) return radix === 10 ? Number(output.toString("latin1", start, start + digits)) : undefined;
  return value;
}

/**
 * Seconds, a point and nanoseconds (GNU find prints ten fractional digits, the last always 0), up
 * to a space, as Node's `msFromTimeSpec` computes `Stats.mtimeMs`: seconds * 1000 + nanoseconds /
 * 1e6, the same double, so a cached stat compares equal. A time before 1970 is refused.
 */
function time(output: Buffer, cursor: { at: number }): number | undefined {
  let seconds = 0;
  let digits = 0;
  for (;;) {
    const byte = output[cursor.at] as number | undefined;
    if (byte === DOT) break;
    const digit = (byte ?? -1) - ZERO;
    if (digit < 0 || digit > 9 || ++digits > 15) return undefined;
    seconds = seconds * 10 + digit;
    cursor.at++;
  }
  if (digits === 0) return undefined;
  cursor.at++;
  let nanoseconds = 0;
  let fraction = 0;
  for (;;) {
    const byte = output[cursor.at] as number | undefined;
    if (byte === SPACE) break;
    const digit = (byte ?? -1) - ZERO;
    if (digit < 0 || digit > 9) return undefined;
    if (fraction < 9) nanoseconds = nanoseconds * 10 + digit;
    fraction++;
    cursor.at++;
  }
  cursor.at++;
  if (fraction < 9) return undefined;
  return seconds * 1000 + nanoseconds / 1e6;
}
