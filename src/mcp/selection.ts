import { definitionDigest, type McpServerDefinition } from "./config.js";

/**
 * Which configured servers may start. The user's own servers (user config) start; a server a
 * project proposes (its harness.config.json) starts only when the user approved that exact
 * definition, by digest, so a project that changes a command, an argument, a variable or a URL
 * needs a new approval. Nothing a project proposes starts silently.
 */

export interface SelectedServer {
  name: string;
  definition: McpServerDefinition;
  source: "user" | "project";
  /** definitionDigest(definition): what was (or would be) approved. */
  digest: string;
}

export interface ServerSelection {
  /** Servers that may start, the user's first, each group in name order. */
  start: SelectedServer[];
  /** Project proposals without an approval of their exact definition: never started. */
  unapproved: SelectedServer[];
  /** Names a project proposed that the user config defines itself (the user's definition wins). */
  shadowed: string[];
}

/** Whether the user approved the project's server `name` with this exact definition digest. */
export type ApprovalCheck = (name: string, digest: string) => boolean;

export function selectServers(
  user: Readonly<Record<string, McpServerDefinition>>,
  project: Readonly<Record<string, McpServerDefinition>>,
  approved: ApprovalCheck,
): ServerSelection {
  const start: SelectedServer[] = [];
  const unapproved: SelectedServer[] = [];
  const shadowed: string[] = [];
  for (const name of Object.keys(user).sort()) {
    const definition = user[name]!;
    start.push({ name, definition, source: "user", digest: definitionDigest(definition) });
  }
  for (const name of Object.keys(project).sort()) {
    if (Object.hasOwn(user, name)) {
      shadowed.push(name);
      continue;
    }
    const definition = project[name]!;
    const server: SelectedServer = {
      name,
      definition,
      source: "project",
      digest: definitionDigest(definition),
    };
    (approved(name, server.digest) ? start : unapproved).push(server);
  }
  return { start, unapproved, shadowed };
}
