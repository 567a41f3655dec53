import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { displayPath, userConfigPath } from "../config/load.js";
import {
  INSTRUCTIONS_FILE,
  type SessionEnvironment,
  type StartInstructions,
} from "../engine/instructions.js";
import type { ToolSnapshot } from "../runtime/registry.js";
import { locateShell } from "../tools/shell/locate.js";
import type { SessionProcesses } from "./processes.js";
import { UsageError } from "./usage-error.js";

/**
 * The user's AGENTS.md lives next to the user config (the directory of `$HARNESS_CONFIG`, else
 * ~/.config/harness). Its text goes to the model only; nothing here is ever run.
 */
export async function startInstructions(
  env: Readonly<Record<string, string | undefined>>,
  home: string = homedir(),
): Promise<StartInstructions> {
  const path = join(dirname(userConfigPath(env, home)), INSTRUCTIONS_FILE);
  const shown = displayPath(path, home);
  try {
    return { user: { path: shown, bytes: await readFile(path) }, workspace: true };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { workspace: true };
    throw new UsageError(
      `user instructions ${shown} cannot be read (${code ?? "I/O error"}); fix or remove the file`,
    );
  }
}

/** What the model is told about where it works, from the session's resolved setup. */
export function sessionEnvironment(
  snapshot: ToolSnapshot,
  processes: Pick<SessionProcesses, "shell" | "shellRefusal">,
  modes: Pick<SessionEnvironment, "write" | "shell" | "read_only">,
  env: Readonly<Record<string, string | undefined>>,
): SessionEnvironment {
  const shell =
    snapshot.get("shell") === undefined
      ? "none (no shell tool)"
      : processes.shellRefusal !== undefined
        ? "none (shell commands are refused in this run)"
        : basename(locateShell(env.PATH));
  return {
    os: `${process.platform} (${process.arch})`,
    shell_program: shell,
    sandbox: processes.shell,
    ...modes,
  };
}
