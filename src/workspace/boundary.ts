import picomatch from "picomatch";
import { RESERVED_DIR, WorkspaceError } from "./fs.js";

/**
 * The lexical half of the workspace boundary: checks that need no disk access. Both file-system
 * implementations run these first; the disk one then resolves symlinks (see disk-fs.ts).
 *
 * The public contract is "a plain workspace-relative POSIX path", and this module never repairs
 * input: anything that could mean something else on some platform is refused instead.
 * The workspace name space is the intersection of what POSIX and Windows 11 accept, so a name
 * that is a device, a stream or a Win32-trimmed name on Windows is refused everywhere.
 *
 * Decisions:
 * - `\` is not a separator. A leading `\` is absolute (PATH_ESCAPE); anywhere else INVALID_PATH.
 * - `..` is refused even when the path would normalize back inside (`nested/../x`): the model
 *   must name the file it means, and refusing keeps the rule simple to state.
 * - `.` components and repeated or trailing `/` are dropped.
 * - `.harness` as the first component is reserved, compared case-insensitively because
 *   case-insensitive file systems (Windows, macOS) map `.HARNESS` onto the same directory.
 */

/** Longest accepted path, in UTF-16 code units. */
export const MAX_PATH_LENGTH = 4096;
/** Longest accepted single component, in UTF-8 bytes (the common file-system limit). */
export const MAX_COMPONENT_BYTES = 255;

const DRIVE = /^[A-Za-z]:/;
/** C0 controls and the characters Win32 refuses in names (`:` is handled on its own). */
const FORBIDDEN_CHARS = /[\u0001-\u001f<>"|?*]/;
/** Unpaired UTF-16 surrogates: the file system would store U+FFFD, aliasing other names. */
const LONE_SURROGATE = /[\ud800-\udfff]/u;
/** Win32 device names, matched against the part before the first dot. */
const DEVICE_NAME = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)$/i;
/** The longest name DEVICE_NAME matches (`conout$`). */
const DEVICE_STEM_MAX = 7;

/**
 * Check an untrusted workspace-relative path and return its normalized components
 * (`[]` for the workspace root). Throws WorkspaceError PATH_ESCAPE, INVALID_PATH or
 * RESERVED_PATH.
 */
export function relativeParts(path: string): string[] {
  const parts = lexicalParts(path);
  assertNotReserved(parts, path);
  return parts;
}

/** Like relativeParts, but returns the normalized POSIX path ("." for the root). */
export function normalizeRelativePath(path: string): string {
  return joinParts(relativeParts(path));
}

/** The lexical checks without the reserved-directory rule (for fixtures and canonical re-checks). */
export function lexicalParts(path: string): string[] {
  checkWholeString(path, path);
  const parts: string[] = [];
  for (const component of path.split("/")) {
    if (component === "" || component === ".") continue;
    checkComponent(component, path);
    parts.push(component);
  }
  return parts;
}

/** True when the normalized components point into the reserved `.harness` directory. */
export function isReservedParts(parts: readonly string[]): boolean {
  const first = parts[0];
  return first !== undefined && first.toLowerCase() === RESERVED_DIR;
}

function assertNotReserved(parts: readonly string[], original: string): void {
  if (isReservedParts(parts)) {
    throw new WorkspaceError(
      "RESERVED_PATH",
      original,
      `${quote(original)} is inside the reserved ${RESERVED_DIR} directory`,
    );
  }
}

/** Normalized components back to a POSIX relative path; "." for the root. */
export function joinParts(parts: readonly string[]): string {
  return parts.length === 0 ? "." : parts.join("/");
}

/** True when `name` is usable as one component of a workspace path. */
export function isValidComponent(name: string): boolean {
  if (name === "" || name === "." || name === ".." || name.includes("/")) return false;
  try {
    checkWholeString(name, name);
    checkComponent(name, name);
    return true;
  } catch (error) {
    if (error instanceof WorkspaceError) return false;
    throw error;
  }
}

/**
 * Check a glob pattern against the same boundary: relative, no `..` component, no backslash
 * (so no escapes), no leading `!` (negation is not supported), not inside `.harness`.
 * Glob syntax characters are allowed. Returns the pattern with `.` and empty components dropped.
 */
export function checkGlobPattern(pattern: string): string {
  checkSharedRules(pattern, pattern, PATTERN_WORDS);
  if (/[\u0001-\u001f]/.test(pattern)) throw invalid(pattern, "the pattern contains a control character");
  if (pattern.startsWith("!")) throw invalid(pattern, "negated patterns are not supported");
  const wildcards = globWildcardProblem(pattern);
  if (wildcards !== undefined) throw invalid(pattern, wildcards);
  const parts = pattern.split("/").filter((component) => component !== "" && component !== ".");
  if (parts.length === 0) throw invalid(pattern, "the pattern names no files");
  if (isReservedParts(parts)) {
    throw new WorkspaceError(
      "RESERVED_PATH",
      pattern,
      `${quote(pattern)} points into the reserved ${RESERVED_DIR} directory`,
    );
  }
  return parts.join("/");
}

/** Most runs of `*` (`*` or `**`) a glob pattern may hold; see globWildcardProblem. */
export const GLOB_MAX_WILDCARDS = 3;

/**
 * Why a glob pattern has too many wildcards to match safely, or undefined. Patterns are matched
 * as backtracking regular expressions on harness's main thread, one path at a time, and the time
 * grows with the path's length to the power of the number of `*` runs: `*a*a*a*b` against a
 * 250-character name takes a second, `**` + `/*a*` three times over a long path a minute, and 17
 * runs hours, during which nothing else (timeouts, Ctrl-C, other sessions) can run. With at most
 * three runs a crafted name costs milliseconds. Used for glob's pattern and grep's `include`.
 */
export function globWildcardProblem(pattern: string): string | undefined {
  const runs = pattern.match(/\*+/g)?.length ?? 0;
  if (runs <= GLOB_MAX_WILDCARDS) return undefined;
  return `the pattern has ${runs} wildcards (* or **); at most ${GLOB_MAX_WILDCARDS} are allowed: use a narrower pattern, or grep with a regular expression`;
}

/**
 * Whether a path relative to the glob's directory matches a checked pattern, with the options
 * tinyglobby uses for DiskWorkspaceFs (dotfiles match, `/` separators), so every workspace
 * implementation matches alike.
 */
export function globMatcher(checkedPattern: string): (relative: string) => boolean {
  return picomatch(checkedPattern, { dot: true, posix: true });
}

/** How messages name the checked text: a workspace path or a glob pattern. */
interface Words {
  noun: "path" | "pattern";
  /** What to use instead of an absolute one. */
  relative: string;
  /** Where `..` is not allowed. */
  dotDot: string;
}
const PATH_WORDS: Words = {
  noun: "path",
  relative: "a path relative to the workspace root",
  dotDot: "workspace paths",
};
const PATTERN_WORDS: Words = {
  noun: "pattern",
  relative: "a workspace-relative pattern",
  dotDot: "patterns",
};

/** The rules a path and a glob pattern share, in the same order for both. */
function checkSharedRules(text: string, original: string, words: Words): void {
  if (text.length === 0) throw invalid(original, `the ${words.noun} is empty`);
  if (text.length > MAX_PATH_LENGTH) throw invalid(original, `the ${words.noun} is too long`);
  if (text.includes("\0")) throw invalid(original, `the ${words.noun} contains a NUL byte`);
  if (text.startsWith("/") || text.startsWith("\\")) {
    throw escapeError(original, `absolute ${words.noun}s are not allowed; use ${words.relative}`);
  }
  if (DRIVE.test(text)) throw escapeError(original, `drive letters are not allowed; use ${words.relative}`);
  // `..` is classified as an escape before any other complaint, wherever it sits, and also when
  // spelled with Windows separators (`a\..\b`), which is an escape attempt there.
  if (text.split(/[\\/]/).includes(".."))
    throw escapeError(original, `'..' is not allowed in ${words.dotDot}`);
  if (text.includes("\\")) throw invalid(original, "use '/' as the separator; backslashes are not supported");
}

function checkWholeString(path: string, original: string): void {
  checkSharedRules(path, original, PATH_WORDS);
  if (path.includes(":")) throw invalid(original, "':' is not allowed (alternate data streams)");
  if (LONE_SURROGATE.test(path)) throw invalid(original, "the path contains an unpaired UTF-16 surrogate");
}

function checkComponent(component: string, original: string): void {
  if (FORBIDDEN_CHARS.test(component)) {
    throw invalid(original, `${quote(component)} contains a control character or one of < > " | ? *`);
  }
  if (component.endsWith(".") || component.endsWith(" ")) {
    throw invalid(original, `${quote(component)} ends with a dot or a space`);
  }
  // Every device name is at most 7 characters before its first dot (and trailing spaces), so
  // the usual longer stem needs no pattern test; this runs for every component of every path.
  const dot = component.indexOf(".");
  const stemEnd = dot === -1 ? component.length : dot;
  if (stemEnd <= DEVICE_STEM_MAX || component.charCodeAt(stemEnd - 1) === 0x20) {
    const stem = component.slice(0, stemEnd).replace(/ +$/, "");
    if (DEVICE_NAME.test(stem))
      throw invalid(original, `${quote(component)} is a reserved Windows device name`);
  }
  // A UTF-16 code unit is at most 3 UTF-8 bytes, so a short component needs no count.
  if (
    component.length * 3 > MAX_COMPONENT_BYTES &&
    Buffer.byteLength(component, "utf8") > MAX_COMPONENT_BYTES
  ) {
    throw invalid(original, `a component is longer than ${MAX_COMPONENT_BYTES} bytes`);
  }
}

function escapeError(path: string, reason: string): WorkspaceError {
  return new WorkspaceError("PATH_ESCAPE", path, `path escapes the workspace: ${quote(path)}: ${reason}`);
}

function invalid(path: string, reason: string): WorkspaceError {
  return new WorkspaceError("INVALID_PATH", path, `invalid path ${quote(path)}: ${reason}`);
}

/** JSON quoting keeps control characters and NUL visible and harmless in messages. */
export function quote(path: string): string {
  const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path;
  return JSON.stringify(shown);
}
