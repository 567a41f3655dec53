import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { errnoCode, errnoText } from "../shared/errno.js";
import { JOURNAL_KEY_BYTES, JournalKey } from "./key.js";
import { JournalError } from "./store.js";

/** The environment variable that moves the per-user journal key (tests point it at a temp file). */
export const KEY_FILE_ENV = "HARNESS_KEY_FILE";

const KEY_TEXT = /^([0-9a-f]{64})\n?$/;

/** Where this user's journal key lives: $HARNESS_KEY_FILE, else the user config directory. */
export function journalKeyPath(env: NodeJS.ProcessEnv = process.env): string {
  const override = env[KEY_FILE_ENV];
  if (override) return resolve(override);
  const configHome = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : undefined;
  return join(configHome ?? join(homedir(), ".config"), "harness", "journal.key");
}

function refused(path: string, problem: string): JournalError {
  return new JournalError("KEY", `the journal key ${path} ${problem}`);
}

/** The real path of `path`'s directory (created when absent), so a symlinked directory cannot hide where the key is. */
function realDirectory(path: string): string {
  const dir = dirname(path);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return realpathSync(dir);
  } catch (error) {
    throw refused(path, `cannot be created: its directory is not usable (${errnoText(error)})`);
  }
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * Create the key with one atomic step: the secret is written to a private temporary file and
 * linked into place, so a concurrent process either sees no key or the whole key, never half.
 */
function createKeyFile(path: string): void {
  const temp = `${path}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  try {
    writeSync(fd, `${randomBytes(JOURNAL_KEY_BYTES).toString("hex")}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, path);
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
    // Another process created it first: use theirs.
  } finally {
    unlinkSync(temp);
  }
}

function readKeyFile(path: string): JournalKey {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if (errnoText(error) === "ELOOP")
      throw refused(path, "is a symbolic link; keep the key in a regular file");
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw refused(path, "is not a regular file");
    const uid = process.getuid?.();
    if (uid !== undefined && stat.uid !== uid) {
      throw refused(
        path,
        `is owned by uid ${stat.uid}, not by you (uid ${uid}); only your own key is trusted`,
      );
    }
    if ((stat.mode & 0o077) !== 0) {
      throw refused(
        path,
        `can be read by other users (mode ${(stat.mode & 0o777).toString(8)}); ` +
          `make it private with: chmod 600 ${path}`,
      );
    }
    const match = KEY_TEXT.exec(readFileSync(fd, "utf8"));
    if (!match?.[1]) {
      throw refused(path, `is not a journal key (expected ${JOURNAL_KEY_BYTES * 2} hex digits)`);
    }
    return JournalKey.fromSecret(Buffer.from(match[1], "hex"));
  } finally {
    closeSync(fd);
  }
}

const loaded = new Map<string, JournalKey>();

/**
 * This user's journal key, created on first use (mode 0600, directory 0700). Refused when it lies
 * inside `workspaceRoot` (a repository could ship it), is a symlink, is not the user's, or can be
 * read by others. Throws JournalError("KEY") with what to do.
 */
export function loadJournalKey(options: { path?: string; workspaceRoot?: string } = {}): JournalKey {
  const path = resolve(options.path ?? journalKeyPath());
  const workspace = options.workspaceRoot === undefined ? undefined : realpathSync(options.workspaceRoot);
  const insideWorkspace = (candidate: string) =>
    workspace !== undefined &&
    (isInside(workspace, candidate) || isInside(resolve(options.workspaceRoot ?? workspace), candidate));
  // Checked before anything is created (the path as written) and after (the real path, so a
  // symlinked directory cannot lead into the workspace).
  if (!insideWorkspace(path)) {
    const realPath = join(realDirectory(path), basename(path));
    if (!insideWorkspace(realPath)) return loadAt(path, realPath);
  }
  throw refused(
    path,
    `lies inside the workspace ${options.workspaceRoot}, where a repository could ship or read it; ` +
      `set ${KEY_FILE_ENV} to a file outside any workspace`,
  );
}

function loadAt(path: string, realPath: string): JournalKey {
  const cached = loaded.get(realPath);
  if (cached) return cached;
  try {
    let key: JournalKey;
    try {
      key = readKeyFile(realPath);
    } catch (error) {
      if (errnoText(error) !== "ENOENT") throw error;
      createKeyFile(realPath);
      key = readKeyFile(realPath);
    }
    loaded.set(realPath, key);
    return key;
  } catch (error) {
    if (error instanceof JournalError) throw error;
    throw refused(path, `cannot be read or created (${errnoText(error)})`);
  }
}
