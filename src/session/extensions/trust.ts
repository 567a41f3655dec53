/**
 * Approval of what a project ships (skills, commands, plugins), kept where project MCP servers'
 * approvals are: the user config, never the project's (`plugin_approvals.NAME`, a list). An
 * approval is bound to the workspace's real path, the kind and the digest of exactly what the
 * user looked at; the same name shipped by another repository, or the same skill with an edited
 * script, is not approved.
 */

export type ExtensionKind = "skill" | "command" | "plugin";

export interface ExtensionApproval {
  workspace: string;
  kind: ExtensionKind;
  digest: string;
}

export type RecordedApprovals = Readonly<Record<string, readonly ExtensionApproval[]>>;

/** `user`: the user's own (trusted); the rest are a project's. */
export type TrustState = "user" | "approved" | "none" | "changed";

export interface TrustVerdict {
  state: TrustState;
  /** Why a project's item is not loaded, for the user. */
  reason?: string;
}

export function judgeExtension(
  approvals: RecordedApprovals,
  item: { kind: ExtensionKind; name: string; digest: string },
  workspace: string,
): TrustVerdict {
  const here = (approvals[item.name] ?? []).find(
    (entry) => entry.workspace === workspace && entry.kind === item.kind,
  );
  if (here === undefined) return { state: "none", reason: "you have not approved it" };
  if (here.digest !== item.digest)
    return { state: "changed", reason: "it changed since you approved it (its digest differs)" };
  return { state: "approved" };
}

/** The approvals of one name with `approval` added, replacing an earlier one of its workspace and kind. */
export function withExtensionApproval(
  recorded: readonly ExtensionApproval[] | undefined,
  approval: ExtensionApproval,
): ExtensionApproval[] {
  return [
    ...(recorded ?? []).filter(
      (entry) => !(entry.workspace === approval.workspace && entry.kind === approval.kind),
    ),
    approval,
  ];
}
