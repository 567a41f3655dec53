import path from "node:path";
import { isStdioDefinition } from "../mcp/config.js";
import { serverNamedFiles } from "../mcp/named-files.js";
import type { SelectedServer, ServerSelection } from "../mcp/selection.js";
import { commandProfile, type SandboxOverride } from "../sandbox/profiles.js";

/*
 * A session whose workspace a server client chose, for a client without host rights: what the
 * workspace holds is the client's word, so nothing in it may become code the host runs outside
 * the sandbox. (The project config is read as untrusted for such a session, see governance.ts;
 * its scripted model is JSON data, see setup.ts.) This module decides which MCP servers still
 * start: the user's own, unless one would run unsandboxed from the workspace (its working
 * directory there, or a file it names there), where the client's files would be its code.
 */

export function serversWithoutWorkspaceCode(
  selection: ServerSelection,
  workspaceRoot: string,
  override: SandboxOverride | undefined,
): { selection: ServerSelection; notices: string[] } {
  const notices: string[] = [];
  const start: SelectedServer[] = [];
  for (const server of selection.start) {
    const reason = withheldBecause(server, workspaceRoot, override);
    if (reason === undefined) start.push(server);
    else notices.push(`MCP server "${server.name}" was not started for this identity: ${reason}`);
  }
  for (const server of selection.unapproved)
    notices.push(`MCP server "${server.name}" was not started for this identity: the project proposes it`);
  return { selection: { start, unapproved: [], shadowed: selection.shadowed }, notices };
}

function withheldBecause(
  server: SelectedServer,
  workspaceRoot: string,
  override: SandboxOverride | undefined,
): string | undefined {
  if (server.source !== "user") return "the project proposes it";
  const definition = server.definition;
  if (!isStdioDefinition(definition)) return undefined;
  if (commandProfile(definition.sandbox, "workspace-write", override) !== "none") return undefined;
  const cwd = definition.cwd === undefined ? workspaceRoot : path.resolve(workspaceRoot, definition.cwd);
  if (isAtOrUnder(workspaceRoot, cwd)) return "it runs unsandboxed in the workspace";
  if (serverNamedFiles([definition], workspaceRoot).some((file) => isAtOrUnder(workspaceRoot, file)))
    return "it runs unsandboxed a file in the workspace";
  return undefined;
}

function isAtOrUnder(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
