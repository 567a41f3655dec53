import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { userConfigPath } from "../config/load.js";
import { journalKeyPath } from "../journal/key-file.js";

/**
 * The one list of harness's own credentials and state on the host that no sandboxed process may
 * see (the sandbox hides each wherever it would show it: src/sandbox/harness-secrets.ts). Every
 * sandbox the CLI builds (shell, acceptance commands, command hooks, MCP stdio servers, for a run,
 * a server's sessions and `apply --accept`) takes it from here.
 */

/** Secrets of this process beyond the user's own (the server's tokens file), known once read. */
const processSecrets = new Set<string>();

/** Add a file this process holds a credential in (the `serve --tokens` file) to every later sandbox. */
export function registerSecretPath(file: string): void {
  processSecrets.add(resolve(file));
}

/** What this process registered (handed to `harness serve`'s session threads, whose module state is their own). */
export function registeredSecretPaths(): string[] {
  return [...processSecrets];
}

/**
 * The journal key, the user config file, harness's config directory (where both live by default,
 * with the user's AGENTS.md and `harness config` temporary files), and what this process
 * registered. A user config moved by `HARNESS_CONFIG` is hidden as a file: the directory it lies
 * in is the user's choice and may be anything, the workspace included.
 */
export function harnessSecretPaths(
  env: Readonly<Record<string, string | undefined>>,
  home: string = homedir(),
): string[] {
  const paths = [
    journalKeyPath(env as NodeJS.ProcessEnv),
    userConfigPath(env, home),
    join(home, ".config", "harness"),
  ];
  const configHome = env.XDG_CONFIG_HOME;
  if (configHome !== undefined && isAbsolute(configHome)) paths.push(join(configHome, "harness"));
  paths.push(...processSecrets);
  return [...new Set(paths)];
}
