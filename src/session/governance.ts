import { homedir } from "node:os";
import { ConfigError } from "../config/errors.js";
import { type ConfigSource, type LoadedConfig, loadConfig } from "../config/load.js";
import { sandboxReadPaths } from "../config/sections.js";
import { cliLayer } from "../policy/cli-flags.js";
import {
  buildPolicy,
  type PermissionLayer,
  type PermissionSettings,
  type Policy,
} from "../policy/permissions.js";
import { Executor } from "../sandbox/executor.js";
import type { SandboxView } from "../sandbox/sandbox.js";
import { SessionNetwork } from "../sandbox/session-network.js";
import { DEFAULT_PROTECTED_PATHS } from "../workspace/protected.js";
import { type ConfigHooksOptions, configNamedFiles, hooksFromConfig } from "./config-hooks.js";
import { credentialNames } from "./credentials.js";
import { pluginHookSources } from "./extensions/plugin-parts.js";
import { sessionExtensions } from "./extensions/session.js";
import { harnessSecretPaths } from "./harness-secrets.js";
import { providerKeyNames, sessionProcesses } from "./processes.js";
import type { RunFlags } from "./run-flags.js";
import { UsageError } from "./usage-error.js";

/**
 * Governance from config files and flags: the effective policy, the configured hooks and how a
 * session's processes run. This is where config (plain, validated settings) meets policy (which
 * decides calls); neither of those folders imports the other.
 */

/** The permission layers of the loaded files, in increasing precedence (user, then project). */
function permissionLayers(loaded: LoadedConfig): PermissionLayer[] {
  const layers: PermissionLayer[] = [];
  if (loaded.user !== undefined) layers.push(layerOf(loaded.user, true));
  if (loaded.project !== undefined) layers.push(layerOf(loaded.project, loaded.projectTrusted));
  return layers;
}

function layerOf(source: ConfigSource, trusted: boolean): PermissionLayer {
  const permissions = source.config.permissions ?? {};
  const layer: PermissionLayer = { source: source.label, trusted };
  if (permissions.allow !== undefined) layer.allow = permissions.allow;
  if (permissions.ask !== undefined) layer.ask = permissions.ask;
  if (permissions.deny !== undefined) layer.deny = permissions.deny;
  if (permissions.write !== undefined) layer.write = permissions.write;
  if (permissions.shell !== undefined) layer.shell = permissions.shell;
  if (permissions.read_only !== undefined) layer.readOnly = permissions.read_only;
  return layer;
}

/**
 * The run's policy from loaded config files and CLI flags (CLI has the highest precedence), over
 * the run's defaults layer when there is one (the lowest).
 */
export function policyFromConfig(
  loaded: LoadedConfig,
  flags: PermissionSettings = {},
  defaults?: PermissionLayer,
): Policy {
  return buildPolicy([...(defaults ? [defaults] : []), ...permissionLayers(loaded), cliLayer(flags)]);
}

/** The config files alone, a config error being a usage error (exit 64). */
export async function loadConfigForCli(workspaceRoot: string, env: NodeJS.ProcessEnv = process.env) {
  try {
    return await loadConfig({ workspaceRoot, env, homedir: homedir() });
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
    throw error;
  }
}

/**
 * Everything governance needs before a run starts: config files, the effective policy over the
 * run's defaults, the configured hooks, how the session's processes run and their one executor.
 * Any error (ConfigError, RuleSyntaxError) means the run must not start.
 */
export async function loadGovernance(
  workspaceRoot: string,
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  options: {
    onSpawn?: ConfigHooksOptions["onSpawn"];
    /** The network of command hooks that ask for it (the setup binds it once the policy exists). */
    hookNetwork?: ConfigHooksOptions["network"];
    homedir?: string;
    /**
     * false: the project config counts as untrusted whatever the user config says (its hooks,
     * model profiles and loosened settings ignored), for a session whose workspace a server
     * client without host rights chose (see workspace-code.ts).
     */
    trustProject?: boolean;
  } = {},
) {
  const home = options.homedir ?? homedir();
  const config = await loadConfig({ workspaceRoot, env, homedir: home });
  if (options.trustProject === false && config.projectTrusted) {
    config.projectTrusted = false;
    config.notices.push(
      "the project is trusted in your config, but not for this identity (it has no host rights): the project config counts as untrusted",
    );
  }
  // Skills, commands and plugins: the user's, and the project's the user approved by digest (none
  // of the project's for a workspace a client without host rights chose).
  const extensions = sessionExtensions({
    config,
    workspaceRoot,
    env,
    home,
    ...(options.trustProject === false ? { project: false } : {}),
  });
  const plugins = pluginHookSources(extensions);
  config.notices.push(...plugins.notices);
  const defaults: PermissionLayer = { source: "default (no terminal: deny; terminal: ask)", trusted: true };
  if (flags.defaults?.write) defaults.write = flags.defaults.write;
  if (flags.defaults?.shell) defaults.shell = flags.defaults.shell;
  const cli: PermissionSettings = {
    ...(flags.allow ? { allow: flags.allow } : {}),
    ...(flags.ask ? { ask: flags.ask } : {}),
    ...(flags.deny ? { deny: flags.deny } : {}),
    ...(flags.write ? { write: flags.write } : {}),
    ...(flags.shell ? { shell: flags.shell } : {}),
    ...(flags.readOnly ? { readOnly: true } : {}),
  };
  const policy = policyFromConfig(config, cli, defaults);
  // What every sandboxed process may see beyond the workspace, and what in it none may change.
  const view: SandboxView = {
    readPaths: sandboxReadPaths(config, home),
    protectedPaths: DEFAULT_PROTECTED_PATHS.withFiles(
      configNamedFiles(config, workspaceRoot, plugins.sources),
    ),
    harnessSecrets: harnessSecretPaths(env, home),
  };
  const processes = sessionProcesses(
    config,
    flags,
    { readOnly: policy.readOnly.value, propose: policy.write.value === "propose" },
    view,
  );
  // One executor for the session: the shell, acceptance checks and command hooks all use it. Its
  // shell calls and acceptance commands share one network namespace (made at the first of them,
  // ended with the session: the setup's `sessionNetwork`). Credentials' real values reach no
  // process (the proxy substitutes them) and no output.
  const executor = new Executor({
    environment: env,
    secretNames: providerKeyNames(flags, config),
    sessionNetwork: new SessionNetwork(),
    withheld: credentialNames(config),
  });
  const hooks = await hooksFromConfig(config, {
    workspaceRoot,
    env,
    executor,
    view,
    plugins: plugins.sources,
    ...(processes.override ? { sandboxOverride: processes.override } : {}),
    ...(processes.bwrapPath ? { bwrapPath: processes.bwrapPath } : {}),
    ...(options.onSpawn ? { onSpawn: options.onSpawn } : {}),
    ...(options.hookNetwork ? { network: options.hookNetwork } : {}),
  });
  return { config, policy, hooks, processes, executor, extensions, pluginHooks: plugins.sources };
}
