/**
 * The lifecycle points of one tool call, in the order the runtime passes them. Defined here, at
 * the runtime floor, because the runtime calls hooks at these points; config and policy name them.
 */
export const HOOK_POINTS = [
  "before_validate",
  "after_validate",
  "before_permission",
  "before_execute",
  "after_execute",
  "on_error",
  "before_project",
  "after_project",
] as const;
export type HookPoint = (typeof HOOK_POINTS)[number];

/**
 * Points where an admit hook may veto. All come before execution; the runtime runs admit hooks
 * at `before_execute` only for calls the policy allowed or the user approved, so no hook can
 * turn a deny into an allow.
 */
export const ADMIT_POINTS: readonly HookPoint[] = [
  "before_validate",
  "after_validate",
  "before_permission",
  "before_execute",
];

/** The config key (and library `point`) for wrap hooks, which surround execution itself. */
export const WRAP_POINT = "execute";
export type WrapPoint = typeof WRAP_POINT;

export type HookKind = "notify" | "admit" | "wrap";
