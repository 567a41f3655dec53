import { type LoadConfigOptions, type LoadedConfig, loadConfig, permissionLayers } from "../config/load.js";
import { type CliPermissionFlags, cliLayer } from "./cli-flags.js";
import { type ConfigHooksOptions, hooksFromConfig } from "./config-hooks.js";
import type { Hook } from "./hooks.js";
import { buildPolicy, type Policy } from "./permissions.js";

/** The run's policy from loaded config files and CLI flags (CLI has the highest precedence). */
export function policyFromConfig(loaded: LoadedConfig, flags: CliPermissionFlags = {}): Policy {
  return buildPolicy([...permissionLayers(loaded), cliLayer(flags)]);
}

export interface Governance {
  config: LoadedConfig;
  policy: Policy;
  hooks: Hook[];
}

/**
 * Everything governance needs before a run starts: config files, the effective policy and the
 * configured hooks. Any error (ConfigError, RuleSyntaxError) means the run must not start.
 */
export async function loadGovernance(
  options: LoadConfigOptions & Pick<ConfigHooksOptions, "env"> & { flags?: CliPermissionFlags },
): Promise<Governance> {
  const config = await loadConfig(options);
  const policy = policyFromConfig(config, options.flags);
  const hooks = await hooksFromConfig(config, { workspaceRoot: options.workspaceRoot, env: options.env });
  return { config, policy, hooks };
}
