import type { PermissionPort } from "../../runtime/ports.js";
import { unaskedShellRefusal } from "../unasked-checks.js";

/**
 * A child's acceptance commands (`accept`) run on the host, in the child's sandbox, and they are
 * named by the parent's model, not by the person: a command the parent's shell may not run is not
 * run as a check either. Each must be one this session's policy lets the shell tool run without
 * asking (no one answers for a check), and the shell must be a tool this session is offered.
 *
 * One refused command drops them all: a child verified by the checks that were left would claim
 * more than was asked. With none kept, the child ends unverified, and an `accept` call's child is
 * merged only when verified, so nothing of it is applied.
 */
export async function grantedAcceptance(
  commands: readonly string[] | undefined,
  parent: { permissions: PermissionPort; tools: readonly string[] },
): Promise<{ accept: string[] | undefined; notGranted: string[] }> {
  if (commands === undefined || commands.length === 0) return { accept: undefined, notGranted: [] };
  const notGranted: string[] = [];
  for (const command of commands) {
    const why = await unaskedShellRefusal(command, parent);
    if (why === undefined) continue;
    const shown = JSON.stringify(command.length > 120 ? `${command.slice(0, 120)}…` : command);
    notGranted.push(`acceptance command ${shown}: ${why}`);
  }
  if (notGranted.length === 0) return { accept: [...commands], notGranted };
  return {
    accept: undefined,
    notGranted: [...notGranted, "no acceptance command was run: the child cannot be verified"],
  };
}
