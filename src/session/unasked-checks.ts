import type { PermissionPort } from "../runtime/ports.js";

/**
 * Why the shell tool may not run `command` without asking under this policy (undefined: it may).
 * A check someone other than the person names (a model, a client) runs only if this says so.
 */
export async function unaskedShellRefusal(
  command: string,
  parent: { permissions: PermissionPort; tools: readonly string[] },
): Promise<string | undefined> {
  if (!parent.tools.includes("shell")) return "this session is not offered the shell";
  const decision = await parent.permissions.decide({
    tool: "shell",
    effect: "process_execution",
    arguments: { command },
  });
  if (decision.decision === "allow") return undefined;
  return `this session's shell may not run it without asking (${decision.decision}: ${decision.rule ?? decision.reason})`;
}
