import { homedir } from "node:os";
import type { LoadedConfig } from "../config/load.js";
import { modelProfiles, processSetting, sandboxReadPaths, sandboxSetting } from "../config/sections.js";
import { type AcceptanceCheck, CommandCheck } from "../engine/acceptance.js";
import { DEFAULT_KEY_ENV } from "../providers/config.js";
import { createSandbox } from "../sandbox/create.js";
import { Executor, type ProcessProfile } from "../sandbox/executor.js";
import { commandProfile, type SandboxOverride } from "../sandbox/profiles.js";
import type { SandboxView } from "../sandbox/sandbox.js";
import type { ProtectedPaths } from "../workspace/protected.js";
import { harnessSecretPaths } from "./harness-secrets.js";
import type { RunFlags } from "./run-flags.js";

// How each process a session starts is confined: the shell's, acceptance commands' and command
// hooks' sandbox profiles, from the flags, the user config and the run's modes, in one place.

/** How the session's processes run, resolved from flags, the user config and the run's modes. */
export interface SessionProcesses {
  /** The shell tool's profile. */
  shell: "workspace-write" | "read-only" | "none";
  /** Set when the shell may not run at all (a read-only or propose run without a sandbox). */
  shellRefusal?: string;
  acceptance: ProcessProfile;
  bwrapPath?: string;
  /** What every sandboxed process of the session may see and may not change. */
  view: SandboxView;
  notices: string[];
}

/**
 * Binds the run's modes to every process. A read-only run (`--read-only`) and a propose run
 * (`--write propose`) promise an unchanged workspace, so commands run in the read-only sandbox
 * profile: the model can still inspect, build into /tmp and run read-only checks, and nothing
 * it starts can change a file (a refused write is a SANDBOX_VIOLATION it can read). Without a
 * sandbox that promise cannot be kept, so the shell is refused with the reason. The user's own
 * `--sandbox off` for a new session still turns the sandbox off for acceptance and hooks.
 */
export function sessionProcesses(
  config: LoadedConfig,
  flags: RunFlags,
  modes: { readOnly: boolean; propose: boolean },
  view: SandboxView,
): SessionProcesses & { override?: SandboxOverride } {
  const sandbox = sandboxSetting(config);
  const bwrapPath = sandbox?.bwrapPath;
  const chosen = flags.sandbox ?? sandbox?.profile ?? "workspace-write";
  const restricted = modes.readOnly || modes.propose;
  const override: SandboxOverride | undefined =
    flags.sandbox === "off" ? "off" : restricted || flags.sandbox === "read-only" ? "read-only" : undefined;
  const notices: string[] = [];
  const acceptance = processSetting(config, "acceptance");
  if (acceptance.notice) notices.push(acceptance.notice);
  const hooks = processSetting(config, "hook_commands");
  if (hooks.notice) notices.push(hooks.notice);
  const result: SessionProcesses & { override?: SandboxOverride } = {
    shell: restricted ? "read-only" : chosen === "off" ? "none" : chosen,
    acceptance: {
      sandbox: createSandbox({
        profile: commandProfile(acceptance.setting.sandbox, "workspace-write", override),
        ...(bwrapPath ? { bwrapPath } : {}),
        ...view,
      }),
      env: acceptance.setting.pass_env ? { pass: acceptance.setting.pass_env } : {},
    },
    view,
    notices,
  };
  if (bwrapPath) result.bwrapPath = bwrapPath;
  if (override) result.override = override;
  if (restricted && chosen === "off") {
    const mode = modes.readOnly ? "read-only (--read-only)" : "in propose mode (--write propose)";
    result.shellRefusal =
      `the run is ${mode} and the sandbox is off, so a command could change the workspace; ` +
      "use the file tools (read_file, grep, glob) instead";
  }
  return result;
}

/** Variables that hold the provider key, whatever their names: their values are scrubbed from output. */
export function providerKeyNames(flags: RunFlags, config: LoadedConfig): string[] {
  const names = new Set<string>();
  if (flags.apiKeyEnv) names.add(flags.apiKeyEnv);
  if (flags.profile) {
    const variable = modelProfiles(config)[flags.profile]?.api_key_env;
    if (variable) names.add(variable);
  }
  if (flags.provider) {
    const variable = DEFAULT_KEY_ENV[flags.provider as keyof typeof DEFAULT_KEY_ENV];
    if (variable) names.add(variable);
  }
  return [...names];
}

/**
 * The executor and acceptance profile for acceptance commands run outside a session (`harness
 * apply --accept`): the user config decides, as for a run.
 */
export function standaloneAcceptance(
  config: LoadedConfig,
  workspaceRoot: string,
  protectedPaths: ProtectedPaths,
  env: NodeJS.ProcessEnv,
): { check: (command: string, timeoutMs: number) => AcceptanceCheck; notices: string[] } {
  const view: SandboxView = {
    readPaths: sandboxReadPaths(config, homedir()),
    protectedPaths,
    harnessSecrets: harnessSecretPaths(env),
  };
  const processes = sessionProcesses(config, {}, { readOnly: false, propose: false }, view);
  const executor = new Executor({ environment: env });
  return {
    check: (command, timeoutMs) =>
      new CommandCheck(command, {
        workspace: workspaceRoot,
        executor,
        profile: processes.acceptance,
        timeoutMs,
      }),
    notices: processes.notices,
  };
}
