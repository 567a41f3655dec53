import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { dirname } from "node:path";
import { type LoadedConfig, userConfigPath } from "../../config/load.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { discoverExtensions, type Extensions, usable } from "./discover.js";
import type { RecordedApprovals } from "./trust.js";

/** The user's harness folder: the directory of the user config (`~/.config/harness`). */
export function userExtensionsDir(
  env: Readonly<Record<string, string | undefined>>,
  home = homedir(),
): string {
  return dirname(userConfigPath(env, home));
}

/** `plugin_approvals` of the user config: a project's own file cannot approve what it ships. */
export function extensionApprovals(config: LoadedConfig | undefined): RecordedApprovals {
  return config?.user?.config.plugin_approvals ?? {};
}

/** What a session (or `harness plugins`) finds for this workspace and user. */
export function sessionExtensions(options: {
  config: LoadedConfig | undefined;
  workspaceRoot: string;
  env: Readonly<Record<string, string | undefined>>;
  /** False: the workspace's own items are not considered (it is a server client's word). */
  project?: boolean;
  home?: string;
}): Extensions {
  const home = options.home ?? homedir();
  return discoverExtensions({
    workspace: realpathSync(options.workspaceRoot),
    userDir: userExtensionsDir(options.env, home),
    home,
    approvals: extensionApprovals(options.config),
    ...(options.project === false ? { project: false } : {}),
  });
}

/** One line per item that is found but not loaded, saying why and what would load it. */
export function extensionNotices(extensions: Extensions): string[] {
  const notices: string[] = [];
  for (const item of [...extensions.plugins, ...extensions.skills, ...extensions.commands]) {
    if (usable(item)) continue;
    const what = `${item.scope === "project" ? "project " : ""}${item.kind} "${escapeForTerminal(item.name)}" (${escapeForTerminal(item.shown)})`;
    if (item.problem !== undefined) notices.push(`${what} is not loaded: ${escapeForTerminal(item.problem)}`);
    else if (item.source.startsWith("plugin "))
      continue; // the plugin's own line says it
    else
      notices.push(
        `${what} is not loaded: ${item.trust.reason ?? "not approved"}; review it, then: harness plugins approve ${escapeForTerminal(item.name)}`,
      );
  }
  return notices;
}
