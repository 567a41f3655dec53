import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ConfigError } from "../config/errors.js";
import { type ConfigSource, configDirectory, type LoadedConfig } from "../config/load.js";
import type { HookEntryConfig } from "../config/schema.js";
import { processSetting } from "../config/sections.js";
import { type CommandHookSpec, commandHook, type HookNetwork } from "../policy/command-hook.js";
import type { Hook } from "../policy/hooks.js";
import { HOOK_POINTS, type HookPoint, WRAP_POINT } from "../runtime/hook-points.js";
import { createSandbox } from "../sandbox/create.js";
import { Executor, type ProcessProfile, type SpawnReport } from "../sandbox/executor.js";
import { commandProfile, type SandboxOverride } from "../sandbox/profiles.js";
import type { SandboxView } from "../sandbox/sandbox.js";
import { importFile } from "../shared/import-file.js";

export interface ConfigHooksOptions {
  /** Absolute workspace root: command hooks run there. */
  workspaceRoot: string;
  /** The environment command hooks filter from (when no executor is given). */
  env: Readonly<Record<string, string | undefined>>;
  /** The session's executor (shared with the shell and acceptance checks). */
  executor?: Executor;
  /** What the session imposes over the configured profile (see SandboxOverride). */
  sandboxOverride?: SandboxOverride;
  /** Where bubblewrap lives, when the user config says. */
  bwrapPath?: string;
  /** What a hook's sandbox shows beyond the workspace and protects in it (the session's view). */
  view?: SandboxView;
  /**
   * Hooks of usable plugins (extensions/plugin-parts.ts): project sources, run after the config
   * files' hooks only because the plugin is the user's or approved by digest.
   */
  plugins?: readonly ConfigSource[];
  /** Called when a hook's process exists (the engine journals it). */
  onSpawn?: (report: SpawnReport & { callId: string }) => void | Promise<void>;
  /**
   * The session's network for hooks whose definition says `"network": true` (and may have it:
   * see `hookMayHaveNetwork`); absent, or answering undefined (network `off`): none.
   */
  network?: HookNetwork;
}

/**
 * Command hooks run read-only by default: a hook observes a call or decides on it, so it needs to
 * read the workspace but has no business changing it, and a hook that runs on every call must
 * not become a way around the policy it enforces. Nor has it a network, unless its definition
 * says `"network": true` and the session runs with `--network policy`: then, like a command, it
 * reaches only what the `net(...)` rules allow, through a proxy of its own that journals each
 * connection. A user who wants a hook to write a log sets `"hook_commands": {"sandbox":
 * "workspace-write"}` (with `pass_env` for the variables it needs) in the user config.
 */
export const DEFAULT_HOOK_PROFILE = "read-only";

/** The profile command hooks run under: the user config's `hook_commands`, then the session's override. */
export function hookProcessProfile(loaded: LoadedConfig, options: ConfigHooksOptions): ProcessProfile {
  const { setting } = processSetting(loaded, "hook_commands");
  const profile = commandProfile(setting.sandbox, DEFAULT_HOOK_PROFILE, options.sandboxOverride);
  return {
    sandbox: createSandbox({
      profile,
      ...(options.bwrapPath ? { bwrapPath: options.bwrapPath } : {}),
      ...options.view,
      // The user config's hook files outside the workspace (the workspace is mounted anyway); a
      // project config never chooses what of the host a sandbox shows.
      // A user plugin's hook files (under the user's folder) likewise.
      readFiles: namedHookFiles([loaded.user, ...(options.plugins ?? [])]).filter(
        (file) => workspaceRelative(file, options.workspaceRoot) === undefined,
      ),
    }),
    env: setting.pass_env ? { pass: setting.pass_env } : {},
  };
}

/**
 * The hooks the config files register, user config first. A project config's hooks are code
 * from the repository, so they run only when the user trusts the project.
 */
export async function hooksFromConfig(loaded: LoadedConfig, options: ConfigHooksOptions): Promise<Hook[]> {
  const sources: ConfigSource[] = [];
  if (loaded.user !== undefined) sources.push(loaded.user);
  if (loaded.project !== undefined && loaded.projectTrusted) sources.push(loaded.project);
  sources.push(...(options.plugins ?? []));
  const commands: CommandRunner = {
    executor: options.executor ?? new Executor({ environment: options.env }),
    profile: hookProcessProfile(loaded, options),
    ...(options.onSpawn ? { onSpawn: options.onSpawn } : {}),
  };
  const hooks: Hook[] = [];
  for (const source of sources) {
    const config = source.config.hooks ?? {};
    for (const point of [...HOOK_POINTS, WRAP_POINT] as const) {
      for (const [index, entry] of (config[point] ?? []).entries()) {
        if (entry.network === true && !hookMayHaveNetwork(source))
          loaded.notices.push(
            `${source.label}: "network" of hooks.${point}[${index}] is ignored (the hook runs without network); ` +
              "only your user config or a plugin you approved can give a hook the network",
          );
        hooks.push(await hookOf(source, point, index, entry, options, commands));
      }
    }
  }
  return hooks;
}

/** `plugin:NAME` for a plugin's hook source (labelled `plugin NAME`), else undefined. */
function pluginOf(source: ConfigSource): string | undefined {
  return source.label.startsWith("plugin ") ? `plugin:${source.label.slice("plugin ".length)}` : undefined;
}

type CommandRunner = Pick<CommandHookSpec, "executor" | "profile" | "onSpawn">;

/**
 * Whether a hook from `source` may have the network it asks for. The user's own config, and a
 * plugin's hooks (a plugin is usable only when it is the user's or the user approved the project's
 * exactly, by the digest of its folder): the same rule as an MCP server's `"network": true`,
 * honoured only in a definition the user wrote or approved as it is. A project config's hook runs
 * when the user trusts the project, but that trust names no definition: its `network` is ignored.
 */
export function hookMayHaveNetwork(source: ConfigSource): boolean {
  return source.kind === "user" || pluginOf(source) !== undefined;
}

async function hookOf(
  source: ConfigSource,
  point: HookPoint | typeof WRAP_POINT,
  index: number,
  entry: HookEntryConfig,
  options: ConfigHooksOptions,
  commands: CommandRunner,
): Promise<Hook> {
  const where = `hooks.${point}[${index}]`;
  const common = {
    ...(entry.tools === undefined ? {} : { tools: entry.tools }),
    ...(entry.timeout_ms === undefined ? {} : { timeoutMs: entry.timeout_ms }),
  };
  if (entry.command !== undefined) {
    if (entry.kind === "wrap" || point === WRAP_POINT)
      throw new ConfigError(source.label, `${where}: a command cannot wrap`);
    const command = resolveHookCommand(source, entry.command);
    if (source.kind === "user") {
      for (const file of command.files)
        refuseInsideWorkspace(source, where, "command", file, options.workspaceRoot);
    }
    const network = entry.network === true && hookMayHaveNetwork(source) ? options.network : undefined;
    return commandHook({
      kind: entry.kind,
      point,
      command: command.text,
      // A plugin's hook is named by its plugin (`plugin:NAME:point[i]`), a config file's by its kind.
      name: entry.name ?? `${pluginOf(source) ?? source.kind}:${point}[${index}]`,
      cwd: options.workspaceRoot,
      ...commands,
      ...common,
      ...(network !== undefined ? { network } : {}),
    });
  }
  const modulePath = entry.module!;
  if (source.kind === "user") {
    refuseInsideWorkspace(source, where, "module", hookModulePath(source, modulePath), options.workspaceRoot);
  }
  const run = await loadModuleFunction(source, where, modulePath);
  const name = entry.name ?? `module:${modulePath}`;
  if (entry.kind === "wrap") {
    return {
      kind: "wrap",
      point: WRAP_POINT,
      name,
      ...common,
      run: (context, next, signal) => run(context, next, signal),
    };
  }
  if (point === WRAP_POINT)
    throw new ConfigError(source.label, `${where}: only wrap hooks go under "${WRAP_POINT}"`);
  return { kind: entry.kind, point, name, ...common, run: (context, signal) => run(context, signal) };
}

/** Import a hook module, resolved relative to its config file; its default export must be a function. */
async function loadModuleFunction(
  source: ConfigSource,
  where: string,
  modulePath: string,
): Promise<(...args: unknown[]) => unknown> {
  const absolute = hookModulePath(source, modulePath);
  let loaded: unknown;
  try {
    loaded = await importFile(absolute);
  } catch {
    throw new ConfigError(
      source.label,
      `${where}: hook module ${JSON.stringify(modulePath)} could not be loaded`,
    );
  }
  const run = (loaded as { default?: unknown }).default;
  if (typeof run !== "function") {
    throw new ConfigError(
      source.label,
      `${where}: hook module ${JSON.stringify(modulePath)} has no default-exported function`,
    );
  }
  return run as (...args: unknown[]) => unknown;
}

/** A hook module's absolute path: relative paths resolve against the directory of its config file. */
function hookModulePath(source: ConfigSource, modulePath: string): string {
  return isAbsolute(modulePath) ? modulePath : resolve(configDirectory(source), modulePath);
}

/** A word with no shell syntax (quotes, `$`, globs, redirections) that contains a `/`. */
const PATH_WORD = /^[A-Za-z0-9_.+@%,~/-]*\/[A-Za-z0-9_.+@%,~/-]*$/;

export interface ResolvedCommand {
  /** The command with every relative file word made absolute (quoted for the shell). */
  text: string;
  /** The absolute paths of the files it names. */
  files: string[];
}

/**
 * A command hook's file words, resolved against the directory of the config file that names them
 * (never the workspace or the current directory): `./check.sh` in ~/.config/harness/config.json
 * is ~/.config/harness/check.sh. File words are the program when it contains a `/`
 * (`hooks/check.sh`), any word starting with `./` or `../`, and absolute words (kept as written).
 * Other words (`origin/main`, `cat > out.json`) are arguments and stay as written.
 */
export function resolveHookCommand(source: ConfigSource, command: string): ResolvedCommand {
  const files: string[] = [];
  let first = true;
  const words = command.split(/(\s+)/).map((word) => {
    if (word === "" || /^\s+$/.test(word)) return word;
    const program = first;
    first = false;
    if (!PATH_WORD.test(word) || word.startsWith("~")) return word;
    if (isAbsolute(word)) {
      files.push(word);
      return word;
    }
    if (!program && !word.startsWith("./") && !word.startsWith("../")) return word;
    const absolute = resolve(configDirectory(source), word);
    files.push(absolute);
    return shellQuote(absolute);
  });
  return { text: words.join(""), files };
}

/**
 * The workspace-relative paths of files the config files name (hook commands and modules) that
 * lie inside the workspace: the model must never be able to rewrite them. Every config counts,
 * trusted or not, so trusting a project later cannot run a file the agent changed before.
 */
export function configNamedFiles(
  loaded: LoadedConfig,
  workspaceRoot: string,
  plugins: readonly ConfigSource[] = [],
): string[] {
  const files = namedHookFiles([loaded.user, loaded.project, ...plugins])
    .map((file) => workspaceRelative(file, workspaceRoot))
    .filter((inside): inside is string => inside !== undefined);
  return [...new Set(files)].sort();
}

/** The absolute paths of every hook file (command path words and modules) the given configs name. */
function namedHookFiles(sources: readonly (ConfigSource | undefined)[]): string[] {
  const files: string[] = [];
  for (const source of sources) {
    if (source === undefined) continue;
    for (const point of [...HOOK_POINTS, WRAP_POINT] as const) {
      for (const entry of source.config.hooks?.[point] ?? []) {
        if (entry.command !== undefined) files.push(...resolveHookCommand(source, entry.command).files);
        else files.push(hookModulePath(source, entry.module!));
      }
    }
  }
  return files;
}

/** A user-config hook file inside the workspace could be rewritten by the model: refuse it. */
function refuseInsideWorkspace(
  source: ConfigSource,
  where: string,
  what: "command" | "module",
  file: string,
  workspaceRoot: string,
): void {
  const inside = workspaceRelative(file, workspaceRoot);
  if (inside === undefined) return;
  throw new ConfigError(
    source.label,
    `${where}: hook ${what} file ${JSON.stringify(inside)} lies inside the workspace, where the agent could rewrite it; ` +
      "keep hook files next to your config file, outside any workspace",
  );
}

/** `file`'s path relative to the workspace (both compared as real paths), or undefined when outside. */
/** `file` as a workspace path, through symlinks (undefined when it lies outside). */
export function workspaceRelative(file: string, workspaceRoot: string): string | undefined {
  const root = realOrSelf(workspaceRoot);
  const target = realNearest(file);
  const rel = relative(root, target);
  // `..hooks/x.mjs` is inside: only a whole `..` component leaves the workspace.
  if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return rel.split(sep).join("/");
}

function realOrSelf(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return resolve(path);
  }
}

/** The real path of `path`, or of its nearest existing ancestor with the rest appended. */
function realNearest(path: string): string {
  let current = resolve(path);
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync.native(current), ...rest.reverse());
    } catch {
      const parent = dirname(current);
      if (parent === current) return resolve(path);
      rest.push(basename(current));
      current = parent;
    }
  }
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
