import type {
  PermissionDecision,
  PermissionPort,
  PermissionRequest,
  PermissionVerdict,
} from "../runtime/ports.js";

/** How much a verdict holds a call back: a combined decision keeps the one that holds it back most. */
const STRICTNESS: Record<PermissionVerdict, number> = { allow: 0, ask: 1, propose: 2, deny: 3 };

/**
 * A child session's policy: its own (from the modes, tools and scope its `agent` call was granted)
 * and its parent's, both deciding every call; the stricter decision wins (deny > propose > ask >
 * allow), so nothing the parent does not allow becomes allowed below it. The parent's deciding
 * rule keeps its provenance, marked as the parent's.
 */
export class IntersectedPermissions implements PermissionPort {
  constructor(
    private readonly own: PermissionPort,
    private readonly parent: PermissionPort,
    private readonly parentLabel = "parent session",
  ) {}

  /** Denied outright by either: the stricter wins here too. */
  deniesOutright(tool: string): boolean {
    return (this.own.deniesOutright?.(tool) ?? false) || (this.parent.deniesOutright?.(tool) ?? false);
  }

  async decide(request: PermissionRequest): Promise<PermissionDecision> {
    const [own, parent] = await Promise.all([this.own.decide(request), this.parent.decide(request)]);
    if (STRICTNESS[parent.decision] <= STRICTNESS[own.decision]) return own;
    return { ...parent, source: `${this.parentLabel}: ${parent.source}` };
  }
}

/** The verdict of the two that holds a call back more. */
export function stricterVerdict(a: PermissionVerdict, b: PermissionVerdict): PermissionVerdict {
  return STRICTNESS[a] >= STRICTNESS[b] ? a : b;
}
