import type { ApprovalRequest, GrantPort } from "../runtime/ports.js";
import { canonicalJson } from "../shared/hash.js";

/** Session approvals keyed by the exact tool and arguments that were shown to the user. */
export class ExactSessionGrants implements GrantPort {
  private readonly keys = new Set<string>();

  covers(request: ApprovalRequest): boolean {
    return this.keys.has(key(request.tool, request.arguments));
  }

  add(request: ApprovalRequest): void {
    this.keys.add(key(request.tool, request.arguments));
  }
}

function key(tool: string, args: unknown): string {
  return `${tool}\u0000${canonicalJson(args)}`;
}
