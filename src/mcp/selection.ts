import type { ApprovalVerdict } from "./approval.js";
import { definitionDigest, type McpServerDefinition } from "./config.js";

/**
 * Which configured servers may start. The user's own servers (user config) start; a server a
 * project proposes (its harness.config.json) starts only when the user's approval covers it as it
 * is now: in this workspace, this exact definition, and the files it names with the content they
 * had when approved (mcp/approval.ts). Nothing a project proposes starts silently, and a started
 * proposal carries its check so it is made again before every start.
 */

export interface SelectedServer {
  name: string;
  definition: McpServerDefinition;
  source: "user" | "project";
  /** definitionDigest(definition). */
  digest: string;
  /** A proposal: the user's approval judged now (call again to judge it again). */
  approval?: () => ApprovalVerdict;
  /** A proposal: the verdict at selection. */
  verdict?: ApprovalVerdict;
}

export interface ServerSelection {
  /** Servers that may start, the user's first, each group in name order. */
  start: SelectedServer[];
  /** Project proposals the user's approvals do not cover here and now: never started. */
  unapproved: SelectedServer[];
  /** Names a project proposed that the user config defines itself (the user's definition wins). */
  shadowed: string[];
}

/** Whether the user's approval covers the project's server `name` with this definition, here and now. */
export type ApprovalCheck = (name: string, definition: McpServerDefinition) => ApprovalVerdict;

export function selectServers(
  user: Readonly<Record<string, McpServerDefinition>>,
  project: Readonly<Record<string, McpServerDefinition>>,
  approval: ApprovalCheck,
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
    const judge = () => approval(name, definition);
    const verdict = judge();
    const server: SelectedServer = {
      name,
      definition,
      source: "project",
      digest: definitionDigest(definition),
      approval: judge,
      verdict,
    };
    (verdict.approved ? start : unapproved).push(server);
  }
  return { start, unapproved, shadowed };
}
