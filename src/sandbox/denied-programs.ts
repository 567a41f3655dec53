import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sha256Hex } from "../shared/hash.js";
import { isWithin, TOOLCHAIN_PATHS } from "./host-view.js";
import { lstatOrUndefined, realOrUndefined, statOrUndefined } from "./stat.js";

/**
 * A program a deny rule names cannot run inside the sandbox, whatever it is called: every file
 * that is the program (the real file a name on the search path leads to, and each of its hard
 * links in the bin directories the sandbox mounts) is covered by a stub that says so on stderr,
 * notes the refusal where harness reads it after the command, and exits 126. Symbolic links,
 * wrappers, scripts and `cp` (which copies the stub) all reach the stub, so the rule holds where
 * programs run instead of only where the command line names them.
 *
 * Limits: the shell that runs every command is never covered (nothing could run at all): a rule
 * naming it stays a rule on command lines only. Programs outside the directories searched (the
 * command's PATH, workspace directories on it included, and BIN_DIRECTORIES) are not looked for.
 */

export interface DeniedProgram {
  /** A program's file name, `*` for any run of characters (`curl`, `cu*`). */
  name: string;
  /** The rule that denies it, as the user wrote it (shown by the stub). */
  rule: string;
}

/** Where programs are looked for, besides the command's PATH. */
const BIN_DIRECTORIES: readonly string[] = [
  "/usr/local/sbin",
  "/usr/local/bin",
  "/usr/sbin",
  "/usr/bin",
  "/sbin",
  "/bin",
  "/usr/games",
  "/usr/local/games",
  "/usr/libexec",
  "/usr/lib/git-core",
  "/opt/bin",
];

/** Where inside the sandbox a stub notes that it ran (a host file bound there per command). */
export const REFUSALS_PATH = "/.harness-refused";

export interface StubbedFile {
  /** The host path covered by a stub (the same path inside the sandbox). */
  path: string;
  rule: string;
}

export interface DenialPlan {
  /** Files to cover, each with the rule that names it. */
  files: StubbedFile[];
  /** The directories searched (real paths). */
  directories: string[];
  /** Programs a rule names that were left as they are, with why. */
  skipped: { path: string; rule: string; reason: string }[];
}

/**
 * Every file inside the sandbox's view that is a program a rule names. `searchPath`: the PATH the
 * command gets; `visible`: the directories the sandbox shows read-only besides the toolchains
 * (read paths); `shell`: the program that runs the command line, never covered.
 */
export function planDenials(
  denied: readonly DeniedProgram[],
  options: { searchPath: string | undefined; visible: readonly string[]; shell: string; cwd?: string },
): DenialPlan {
  const plan: DenialPlan = { files: [], directories: [], skipped: [] };
  if (denied.length === 0) return plan;
  const shown = [...TOOLCHAIN_PATHS, ...options.visible];
  const directories = new Set<string>();
  for (const entry of [...(options.searchPath ?? "").split(":"), ...BIN_DIRECTORIES]) {
    // A relative entry (an empty one is `.`) is looked up from the command's working directory.
    const directory =
      path.isAbsolute(entry) || options.cwd === undefined ? entry : path.resolve(options.cwd, entry);
    if (!path.isAbsolute(directory)) continue;
    const real = realOrUndefined(directory);
    if (real === undefined || !shown.some((dir) => isWithin(real, dir))) continue;
    directories.add(real);
  }
  plan.directories = [...directories];
  const shell = realOrUndefined(options.shell) ?? options.shell;
  const listings = new Map<string, string[]>();
  const list = (directory: string): string[] => {
    let names = listings.get(directory);
    if (names === undefined) {
      try {
        names = readdirSync(directory);
      } catch {
        names = [];
      }
      listings.set(directory, names);
    }
    return names;
  };
  const byInode = new Map<string, StubbedFile>();
  const add = (file: string, rule: string) => {
    const stats = statOrUndefined(file);
    // Only programs: a data file whose name matches (`curl-notes.md` in a PATH directory) stays.
    if (stats === undefined || !stats.isFile() || (stats.mode & 0o111) === 0) return;
    if (!shown.some((dir) => isWithin(file, dir))) return;
    if (file === shell) {
      plan.skipped.push({ path: file, rule, reason: "it is the shell every command runs in" });
      return;
    }
    const inode = `${stats.dev}:${stats.ino}`;
    if (!byInode.has(inode)) byInode.set(inode, { path: file, rule });
    if (!plan.files.some((entry) => entry.path === file)) plan.files.push({ path: file, rule });
  };
  for (const program of denied) {
    const matches = nameMatcher(program.name);
    for (const directory of directories) {
      for (const name of list(directory)) {
        if (!matches(name)) continue;
        const real = realOrUndefined(path.join(directory, name));
        if (real !== undefined) add(real, program.rule);
      }
    }
  }
  // Hard links: other names of the same file in the directories searched.
  const linked = [...byInode.entries()].filter(([, entry]) => (statOrUndefined(entry.path)?.nlink ?? 1) > 1);
  if (linked.length > 0) {
    const wanted = new Map(linked);
    for (const directory of directories) {
      for (const name of list(directory)) {
        const file = path.join(directory, name);
        const stats = lstatOrUndefined(file);
        if (stats === undefined || !stats.isFile()) continue;
        const entry = wanted.get(`${stats.dev}:${stats.ino}`);
        if (entry !== undefined) add(file, entry.rule);
      }
    }
  }
  return plan;
}

/** `*` for any run of characters, everything else literal: the rules' own pattern language. */
function nameMatcher(pattern: string): (name: string) => boolean {
  const source = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  const regex = new RegExp(`^${source}$`, "s");
  return (name) => regex.test(name);
}

/** Single-quoted for sh: any text, newlines included. */
function quoted(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** The stub's text: a script run by the sandbox's own shell, which is never covered. */
export function stubScript(file: StubbedFile, shell: string): string {
  const message = `harness: ${file.path} is denied by the rule ${file.rule}; the sandbox replaced it with this stub, so it did not run\n`;
  return [
    `#!${shell}`,
    `printf '%s' ${quoted(message)} >&2`,
    `printf '%s\\t%s\\n' ${quoted(file.path)} ${quoted(file.rule)} >> ${REFUSALS_PATH} 2>/dev/null`,
    "exit 126",
    "",
  ].join("\n");
}

let stubDirectory: string | undefined;

/** A private directory (0700) of this process for the stubs and the per-command refusal files. */
function stubHome(): string {
  if (stubDirectory === undefined) {
    stubDirectory = mkdtempSync(path.join(tmpdir(), "harness-stubs-"));
    const created = stubDirectory;
    process.once("exit", () => rmSync(created, { recursive: true, force: true }));
  }
  return stubDirectory;
}

/** The host file holding a stub's text (written once per content, read-only and executable). */
export function stubFile(file: StubbedFile, shell: string): string {
  const text = stubScript(file, shell);
  const stub = path.join(stubHome(), `stub-${sha256Hex(text).slice(0, 32)}`);
  if (statOrUndefined(stub) === undefined) {
    writeFileSync(stub, text, { mode: 0o555 });
    chmodSync(stub, 0o555);
  }
  return stub;
}

/** A fresh, empty host file a command's stubs note refusals in. */
export function refusalFile(): string {
  const file = path.join(stubHome(), `refused-${randomBytes(12).toString("hex")}`);
  writeFileSync(file, "", { mode: 0o600 });
  return file;
}

const MAX_REFUSALS_BYTES = 64 * 1024;

export interface Refusal {
  path: string;
  rule: string;
}

/** What the stubs noted during one command (bounded), then the file is removed. */
export function readRefusals(file: string): Refusal[] {
  let text = "";
  try {
    // The sandboxed command can write as much as it likes into this file: read only the bound.
    const fd = openSync(file, "r");
    try {
      const buffer = Buffer.alloc(MAX_REFUSALS_BYTES);
      text = buffer.subarray(0, readSync(fd, buffer, 0, MAX_REFUSALS_BYTES, 0)).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return [];
  } finally {
    rmSync(file, { force: true });
  }
  const seen = new Map<string, Refusal>();
  for (const line of text.split("\n")) {
    const tab = line.indexOf("\t");
    if (tab <= 0) continue;
    const refusal = { path: line.slice(0, tab), rule: line.slice(tab + 1) };
    seen.set(`${refusal.path}\t${refusal.rule}`, refusal);
  }
  return [...seen.values()].slice(0, 20);
}
