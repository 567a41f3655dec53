import { BINARY_SNIFF_BYTES, GREP_MAX_FILE_BYTES } from "./text.js";

/**
 * The matcher worker, as CommonJS source evaluated with `eval: true` (no file to locate, bundled
 * or not). It receives batches of files and answers, per file, the matching lines (0-based index
 * and the line without its "\r", cut to `lineChars + 1` characters so the caller can tell that it
 * was cut) and whether a file that is not text (binary or not UTF-8) would have matched.
 *
 * A file comes either as bytes read by the caller through the workspace, or as a path the worker
 * opens itself under the workspace's real root: with O_NOFOLLOW, and only if /proc/self/fd says
 * the opened file is exactly at that path (so a directory swapped for a symlink cannot lead the
 * read outside), and only if it is a regular file no larger than the limit.
 *
 * Literal patterns (no regular-expression syntax, case-sensitive) are searched in the bytes with
 * Buffer.indexOf and never decoded unless they match; everything else is a JavaScript RegExp
 * tested on each line, as it always was; when every match must contain some literal (`required`),
 * a file without its bytes is not decoded at all.
 */
export const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const { isUtf8 } = require("node:buffer");
const SNIFF = ${BINARY_SNIFF_BYTES};
const MAX = ${GREP_MAX_FILE_BYTES};
const FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
let cached = { key: undefined };

function compile(job) {
  const key = job.pattern + "\\u0000" + job.flags + "\\u0000" + (job.literal ?? "") + "\\u0000" + (job.required ?? "");
  if (cached.key !== key) {
    cached = {
      key,
      regex: new RegExp(job.pattern, job.flags),
      needle: job.literal === undefined ? undefined : Buffer.from(job.literal, "utf8"),
      required: job.required === undefined ? undefined : Buffer.from(job.required, "utf8"),
    };
  }
  return cached;
}

// One buffer each file is read into, reused: a fresh buffer per file left the worker's memory
// (the thread's own malloc arena) growing by about a megabyte per hundred files on a large tree.
// A file's lines leave as copied strings, so nothing refers to it once the file is answered.
// It grows to the largest file read (at most MAX + 1 bytes) and stays that size: giving a grown
// buffer back after each batch left one dead buffer per large file until the worker's collector
// ran, which on a tree with multi-megabyte sources was tens of megabytes per worker.
const SCRATCH = 1024 * 1024;
let scratch = Buffer.allocUnsafe(SCRATCH);

/** The file's bytes in the scratch buffer (valid until the next read); undefined when over MAX. */
function readAll(fd, size) {
  if (size + 1 > scratch.length) scratch = Buffer.allocUnsafe(Math.min(MAX + 1, size + 1));
  let length = 0;
  for (;;) {
    if (length === scratch.length) {
      // The file grew since fstat: never more than MAX bytes.
      if (length > MAX) return undefined;
      const bigger = Buffer.allocUnsafe(Math.min(MAX + 1, length * 2));
      scratch.copy(bigger, 0, 0, length);
      scratch = bigger;
    }
    const read = fs.readSync(fd, scratch, length, scratch.length - length, null);
    if (read === 0) break;
    length += read;
  }
  return length > MAX ? undefined : scratch.subarray(0, length);
}


function readConfirmed(root, path) {
  const full = root + "/" + path;
  let fd;
  try {
    fd = fs.openSync(full, FLAGS);
  } catch {
    return undefined;
  }
  try {
    if (fs.readlinkSync("/proc/self/fd/" + fd) !== full) return undefined;
    const stat = fs.fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX) return undefined;
    return readAll(fd, stat.size);
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

function isText(bytes) {
  return bytes.subarray(0, SNIFF).indexOf(0) === -1 && isUtf8(bytes);
}

function cut(line, chars) {
  return line.length > chars + 1 ? line.slice(0, chars + 1) : line;
}

function stripCr(raw) {
  return raw.endsWith("\\r") ? raw.slice(0, -1) : raw;
}

function byLiteral(bytes, needle, limit, chars) {
  let at = bytes.indexOf(needle);
  if (at === -1) return { total: 0, shown: [], skipped: false };
  if (!isText(bytes)) return { total: 0, shown: [], skipped: true };
  const shown = [];
  let total = 0;
  let lineStart = 0;
  let index = 0;
  while (at !== -1) {
    let newline = bytes.indexOf(10, lineStart);
    while (newline !== -1 && newline < at) {
      index++;
      lineStart = newline + 1;
      newline = bytes.indexOf(10, lineStart);
    }
    const end = newline === -1 ? bytes.length : newline;
    total++;
    if (shown.length < limit) shown.push([index, cut(stripCr(bytes.toString("utf8", lineStart, end)), chars)]);
    if (newline === -1) break;
    lineStart = newline + 1;
    index++;
    at = bytes.indexOf(needle, lineStart);
  }
  return { total, shown, skipped: false };
}

// Lines are decoded one at a time (a "\\n" byte never lies inside a UTF-8 sequence, so each line
// reads as it would in the whole file's text): decoding a file of megabytes into one string and an
// array of its lines grew each worker's heap by tens of megabytes that it kept. With a literal
// every match contains (\`required\`), only the lines holding it are decoded and tested.
function byRegex(bytes, regex, required, limit, chars) {
  if (required !== undefined && bytes.indexOf(required) === -1) return { total: 0, shown: [], skipped: false };
  const text = isText(bytes);
  const shown = [];
  let total = 0;
  let index = 0;
  let start = 0;
  while (start < bytes.length) {
    let newline = bytes.indexOf(10, start);
    if (required !== undefined) {
      const at = bytes.indexOf(required, start);
      if (at === -1) break;
      while (newline !== -1 && newline < at) {
        index++;
        start = newline + 1;
        newline = bytes.indexOf(10, start);
      }
    }
    const end = newline === -1 ? bytes.length : newline;
    const line = stripCr(bytes.toString("utf8", start, end));
    if (regex.test(line)) {
      // A file that is not text is not shown; whether it would match is all that is counted.
      if (!text) return { total: 0, shown: [], skipped: true };
      total++;
      if (shown.length < limit) shown.push([index, cut(line, chars)]);
    }
    index++;
    start = end + 1;
  }
  return { total, shown, skipped: false };
}

parentPort.on("message", (job) => {
  const { regex, needle, required } = compile(job);
  const results = [];
  for (const file of job.files) {
    const bytes = file.bytes !== undefined ? Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength) : readConfirmed(job.root, file.path);
    if (bytes === undefined) {
      results.push({ total: 0, shown: [], skipped: false });
      continue;
    }
    results.push(needle !== undefined ? byLiteral(bytes, needle, job.limit, job.lineChars) : byRegex(bytes, regex, required, job.limit, job.lineChars));
  }
  parentPort.postMessage({ id: job.id, results });
});
parentPort.postMessage("ready");
`;
