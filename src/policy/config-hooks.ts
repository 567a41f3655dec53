import { isAbsolute, resolve } from "node:path";
import { ConfigError } from "../config/errors.js";
import { type ConfigSource, configDirectory, type LoadedConfig } from "../config/load.js";
import type { HookEntryConfig } from "../config/schema.js";
import { processSetting } from "../config/sections.js";
import { createSandbox } from "../sandbox/create.js";
import { Executor, type ProcessProfile, type SpawnReport } from "../sandbox/executor.js";
import { commandProfile, type SandboxOverride } from "../sandbox/profiles.js";
import { importFile } from "../shared/import-file.js";
import { type CommandHookSpec, commandHook } from "./command-hook.js";
import { HOOK_POINTS, type HookPoint, WRAP_POINT } from "./hook-points.js";
import type { Hook } from "./hooks.js";

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
  /** Called when a hook's process exists (the engine journals it). */
  onSpawn?: (report: SpawnReport & { callId: string }) => void | Promise<void>;
}

/**
 * Command hooks run read-only by default: a hook observes a call or decides on it, so it needs to
 * read the workspace but has no business changing it or reaching the network, and a hook that
 * runs on every call must not become a way around the policy it enforces. A user who wants a hook
 * to post a notification or write a log sets `"hook_commands": {"sandbox": "off"}` (or
 * `workspace-write`, with `pass_env` for the variables it needs) in the user config.
 */
export const DEFAULT_HOOK_PROFILE = "read-only";

/** The profile command hooks run under: the user config's `hook_commands`, then the session's override. */
export function hookProcessProfile(loaded: LoadedConfig, options: ConfigHooksOptions): ProcessProfile {
  const { setting } = processSetting(loaded, "hook_commands");
  const profile = commandProfile(setting.sandbox, DEFAULT_HOOK_PROFILE, options.sandboxOverride);
  return {
    sandbox: createSandbox({ profile, ...(options.bwrapPath ? { bwrapPath: options.bwrapPath } : {}) }),
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
        hooks.push(await hookOf(source, point, index, entry, options, commands));
      }
    }
  }
  return hooks;
}

type CommandRunner = Pick<CommandHookSpec, "executor" | "profile" | "onSpawn">;

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
    return commandHook({
      kind: entry.kind,
      point,
      command: entry.command,
      name: entry.name ?? `${source.kind}:${point}[${index}]`,
      cwd: options.workspaceRoot,
      ...commands,
      ...common,
    });
  }
  const modulePath = entry.module!;
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
  const absolute = isAbsolute(modulePath) ? modulePath : resolve(configDirectory(source), modulePath);
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
