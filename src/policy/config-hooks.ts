import { isAbsolute, resolve } from "node:path";
import { ConfigError } from "../config/errors.js";
import { type ConfigSource, configDirectory, type LoadedConfig } from "../config/load.js";
import type { HookEntryConfig } from "../config/schema.js";
import { importFile } from "../shared/import-file.js";
import { commandHook } from "./command-hook.js";
import { HOOK_POINTS, type HookPoint, WRAP_POINT } from "./hook-points.js";
import type { Hook } from "./hooks.js";

export interface ConfigHooksOptions {
  /** Absolute workspace root: command hooks run there. */
  workspaceRoot: string;
  /** The environment command hooks filter from. */
  env: Readonly<Record<string, string | undefined>>;
}

/**
 * The hooks the config files register, user config first. A project config's hooks are code
 * from the repository, so they run only when the user trusts the project.
 */
export async function hooksFromConfig(loaded: LoadedConfig, options: ConfigHooksOptions): Promise<Hook[]> {
  const sources: ConfigSource[] = [];
  if (loaded.user !== undefined) sources.push(loaded.user);
  if (loaded.project !== undefined && loaded.projectTrusted) sources.push(loaded.project);
  const hooks: Hook[] = [];
  for (const source of sources) {
    const config = source.config.hooks ?? {};
    for (const point of [...HOOK_POINTS, WRAP_POINT] as const) {
      for (const [index, entry] of (config[point] ?? []).entries()) {
        hooks.push(await hookOf(source, point, index, entry, options));
      }
    }
  }
  return hooks;
}

async function hookOf(
  source: ConfigSource,
  point: HookPoint | typeof WRAP_POINT,
  index: number,
  entry: HookEntryConfig,
  options: ConfigHooksOptions,
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
      env: options.env,
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
