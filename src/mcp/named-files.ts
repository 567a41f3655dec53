import { statSync } from "node:fs";
import path from "node:path";
import { isStdioDefinition, type McpServerDefinition } from "./config.js";

/**
 * The files a stdio server definition runs, as absolute paths: its command when it is a path, and
 * every argument that names an existing file (a script, a module), resolved from the server's
 * working directory. The caller keeps those inside the workspace, through symlinks. They join the protected set before any tool runs, like hook scripts, so the agent
 * cannot rewrite a program the host will start (a server may run outside the sandbox, and it is
 * started again on the next run). A user approves a definition by digest; this keeps what it
 * names as it was when approved, as far as the agent is concerned.
 */
export function serverNamedFiles(
  definitions: readonly McpServerDefinition[],
  workspaceRoot: string,
): string[] {
  const files = new Set<string>();
  for (const definition of definitions) {
    if (!isStdioDefinition(definition)) continue;
    const cwd = definition.cwd === undefined ? workspaceRoot : path.resolve(workspaceRoot, definition.cwd);
    for (const word of [definition.command, ...definition.args]) {
      if (word === "" || word.startsWith("-")) continue;
      const candidate = path.resolve(cwd, word);
      if (isFile(candidate)) files.add(candidate);
    }
  }
  return [...files].sort();
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
