import { grantFromDecision, prepareGrantRestore } from "../policy/grants.js";
import { subjectKindOf } from "../policy/subject-kind.js";
import type { GrantPort } from "../runtime/ports.js";
import type { ToolSnapshot } from "../runtime/registry.js";
import type { SessionApproval } from "./state.js";

/**
 * Approvals "for this session" survive a resume: each one the journal holds is granted again,
 * bound to its call's hash, into the grants the resumed run consults. A call is classed by the
 * tools offered now, as the policy classes it when it decides (so an MCP tool is too).
 */
export async function restoreGrants(
  grants: GrantPort,
  approvals: readonly SessionApproval[],
  tools: ToolSnapshot,
): Promise<void> {
  await prepareGrantRestore(approvals.map((approval) => approval.decided));
  for (const { call, decided } of approvals) {
    const entry = tools.get(call.name);
    const grant = grantFromDecision(
      {
        tool: call.name,
        arguments: call.arguments,
        ...(entry ? { subjectKind: subjectKindOf(entry.tool) } : {}),
      },
      decided,
    );
    if (grant) grants.add(grant);
  }
}
