import { constants } from "node:fs";
import { open, readFile, realpath } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { errnoCode } from "../shared/errno.js";
import { openedPath } from "../workspace/opened-path.js";
import { ConfigError } from "./errors.js";
import { type ConfigFile, parseConfigText } from "./schema.js";

export const PROJECT_CONFIG_FILE = "harness.config.json";
export const PROJECT_CONFIG_LABEL = `project config (${PROJECT_CONFIG_FILE})`;

/** Where the user config lives: `$HARNESS_CONFIG`, else `~/.config/harness/config.json`. */
export function userConfigPath(env: Readonly<Record<string, string | undefined>>, homedir: string): string {
  const explicit = env.HARNESS_CONFIG;
  if (explicit !== undefined && explicit !== "") return resolve(expandHome(explicit, homedir));
  return join(homedir, ".config", "harness", "config.json");
}

/** A path for humans and the journal: the home directory shown as `~`. */
export function displayPath(path: string, homedir: string): string {
  const fromHome = relative(homedir, path);
  if (fromHome === "") return "~";
  if (fromHome !== ".." && !fromHome.startsWith(`..${sep}`) && !isAbsolute(fromHome))
    return `~/${fromHome.split(sep).join("/")}`;
  return path;
}

export function userConfigLabel(path: string, homedir: string): string {
  return `user config (${displayPath(path, homedir)})`;
}

function expandHome(path: string, homedir: string): string {
  if (path === "~") return homedir;
  if (path.startsWith("~/")) return join(homedir, path.slice(2));
  return path;
}

export interface ConfigSource {
  kind: "user" | "project";
  /** Display label, used as the provenance of everything this file contributes. */
  label: string;
  /** Absolute host path of the file. For resolving relative hook modules only; never show it. */
  path: string;
  config: ConfigFile;
}

export interface LoadedConfig {
  user?: ConfigSource;
  project?: ConfigSource;
  /** Whether the user config lists this workspace (by real path) in `trusted_projects`. */
  projectTrusted: boolean;
  /** Settings that were present but have no effect, for the CLI to warn about. */
  notices: string[];
}

export interface LoadConfigOptions {
  /** Absolute path of the workspace root. */
  workspaceRoot: string;
  env: Readonly<Record<string, string | undefined>>;
  homedir: string;
}

/**
 * Read and validate the user and project config files. A missing default user config or a
 * missing project config is fine; a `$HARNESS_CONFIG` that names a missing file, unreadable
 * files and malformed content throw ConfigError (fail closed: the run must not start).
 */
export async function loadConfig(options: LoadConfigOptions): Promise<LoadedConfig> {
  const { workspaceRoot, env, homedir } = options;
  const notices: string[] = [];
  const userPath = userConfigPath(env, homedir);
  const userLabel = userConfigLabel(userPath, homedir);
  const explicitUser = env.HARNESS_CONFIG !== undefined && env.HARNESS_CONFIG !== "";
  const userText = await readConfigFile(userPath, userLabel, explicitUser);
  const user: ConfigSource | undefined =
    userText === undefined
      ? undefined
      : { kind: "user", label: userLabel, path: userPath, config: parseConfigText(userText, userLabel) };

  const projectPath = join(workspaceRoot, PROJECT_CONFIG_FILE);
  // An empty file is no config (older harness versions left one behind when they were killed
  // while a sandboxed command ran; the sandbox no longer mounts onto missing names).
  const projectRead = await readConfigFile(
    projectPath,
    PROJECT_CONFIG_LABEL,
    false,
    await realpath(workspaceRoot).catch(() => resolve(workspaceRoot)),
  );
  const projectText = projectRead === "" ? undefined : projectRead;
  const project: ConfigSource | undefined =
    projectText === undefined
      ? undefined
      : {
          kind: "project",
          label: PROJECT_CONFIG_LABEL,
          path: projectPath,
          config: parseConfigText(projectText, PROJECT_CONFIG_LABEL),
        };

  if (project?.config.trusted_projects !== undefined) {
    notices.push(
      `${PROJECT_CONFIG_LABEL}: trusted_projects is ignored; only the user config can trust a project`,
    );
  }
  if (isObject(project?.config.sandbox) && project.config.sandbox.read_paths !== undefined) {
    notices.push(
      `${PROJECT_CONFIG_LABEL}: sandbox.read_paths is ignored; only the user config can widen what the sandbox shows`,
    );
  }
  if (project?.config.credentials !== undefined) {
    notices.push(
      `${PROJECT_CONFIG_LABEL}: "credentials" is ignored; only your user config can bind a credential to a host`,
    );
  }
  const projectTrusted = await isTrustedProject(workspaceRoot, user?.config.trusted_projects ?? [], homedir);
  if (project !== undefined && !projectTrusted) {
    if ((project.config.permissions?.allow ?? []).length > 0) {
      notices.push(`${PROJECT_CONFIG_LABEL}: allow rules are ignored because the project is not trusted`);
    }
    if (project.config.hooks !== undefined) {
      notices.push(`${PROJECT_CONFIG_LABEL}: hooks are ignored because the project is not trusted`);
    }
  }
  const loaded: LoadedConfig = { projectTrusted, notices };
  if (user !== undefined) loaded.user = user;
  if (project !== undefined) loaded.project = project;
  return loaded;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function assertInside(root: string, real: string, label: string): void {
  const rel = relative(root, real);
  if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel))
    throw new ConfigError(label, "is a symbolic link leading outside the workspace; replace it with a file");
}

/** Larger than any config a person writes; a bigger file is refused instead of read into memory. */
export const CONFIG_FILE_LIMIT_BYTES = 1024 * 1024;

/**
 * A config file's text. The user's own config is read as the user named it (a pipe such as
 * `HARNESS_CONFIG=<(...)` included). A project config (`inside` = the workspace's real root) comes
 * with the repository, so it is opened without blocking (a FIFO in its place would otherwise hang
 * every harness command in the workspace), must be a regular file of at most 1 MiB, and must
 * really lie inside the workspace: a repository's symlink cannot make harness read (and quote in
 * its error) a host file such as ~/.ssh/id_rsa, nor /dev/zero.
 */
async function readConfigFile(
  path: string,
  label: string,
  required: boolean,
  inside?: string,
): Promise<string | undefined> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    if (inside === undefined) return await readFile(path, "utf8");
    // Checked before opening (nothing outside is even opened: a device's open can act) and again
    // on the descriptor (a link swapped in between cannot redirect the read; /proc permitting).
    assertInside(inside, await realpath(path), label);
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const opened = openedPath(handle.fd);
    if (opened !== undefined) assertInside(inside, opened, label);
    const stats = await handle.stat();
    if (stats.isDirectory()) throw new ConfigError(label, "is a directory, not a file");
    if (!stats.isFile()) throw new ConfigError(label, "is not a regular file (a FIFO, socket or device)");
    if (stats.size > CONFIG_FILE_LIMIT_BYTES)
      throw new ConfigError(
        label,
        `is ${stats.size} bytes; a config file may hold at most ${CONFIG_FILE_LIMIT_BYTES}`,
      );
    return await handle.readFile("utf8");
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = errnoCode(error);
    if (code === "ENOENT" && !required) return undefined;
    if (code === "ENOENT") throw new ConfigError(label, "file not found ($HARNESS_CONFIG names it)");
    if (code === "EISDIR") throw new ConfigError(label, "is a directory, not a file");
    throw new ConfigError(label, `cannot be read (${code ?? "I/O error"})`);
  } finally {
    await handle?.close();
  }
}

/** Compare real paths so a symlinked or differently spelled workspace is the same project. */
export async function isTrustedProject(
  workspaceRoot: string,
  trusted: readonly string[],
  homedir: string,
): Promise<boolean> {
  if (trusted.length === 0) return false;
  const root = await realOrResolved(workspaceRoot);
  for (const entry of trusted) {
    const expanded = expandHome(entry, homedir);
    // Relative entries would depend on the current directory: never trust by accident.
    if (!isAbsolute(expanded)) continue;
    if ((await realOrResolved(expanded)) === root) return true;
  }
  return false;
}

async function realOrResolved(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return resolve(path);
  }
}

/** The directory a config file's relative hook modules resolve against. */
export function configDirectory(source: ConfigSource): string {
  return dirname(source.path);
}
