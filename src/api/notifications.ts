import { z } from "zod";
import {
  approvalRequested,
  durable,
  journalRecord,
  sessionId,
  sessionStatus,
  toolArguments,
} from "./common.js";

/**
 * Every notification the server sends, with the schema of its params. Durable ones stand for
 * exactly one journal record each and carry `{session, seq, hash, record}`; their JSON is a pure
 * function of the journal, so a replay is byte-identical to the live stream. Transient ones
 * (`item/delta`, `session/status`) have no seq and are never replayed.
 */

const int = z.number().int();

const modelItemStarted = z.object({ kind: z.literal("model"), id: z.string() });
const toolItemStarted = z.object({
  kind: z.literal("tool"),
  id: z.string(),
  tool: z.string(),
  arguments: toolArguments,
});

const modelItemCompleted = z.object({
  kind: z.literal("model"),
  id: z.string(),
  text: z.string(),
  calls: z.array(z.object({ id: z.string(), name: z.string() })),
});
const toolItemCompleted = z.object({
  kind: z.literal("tool"),
  id: z.string(),
  tool: z.string(),
  status: z.string(),
  summary: z.string(),
});
/** The acceptance.checked record's data, spread into the item. */
const acceptanceItemCompleted = z.object({
  kind: z.literal("acceptance"),
  id: z.string(),
  accepted: z.boolean(),
  checks: z.array(z.object({ name: z.string(), passed: z.boolean() }).loose()),
});

export const TURN_COMPLETED_STATUSES = ["finished", "stopped", "cancelled", "interrupted"] as const;

export const NOTIFICATIONS = {
  "turn/started": z.object({ ...durable, turn: int.positive(), input: z.string() }),
  "item/started": z.object({
    ...durable,
    item: z.discriminatedUnion("kind", [modelItemStarted, toolItemStarted]),
  }),
  "item/completed": z.object({
    ...durable,
    item: z.discriminatedUnion("kind", [modelItemCompleted, toolItemCompleted, acceptanceItemCompleted]),
  }),
  "turn/completed": z.object({
    ...durable,
    status: z.enum(TURN_COMPLETED_STATUSES),
    outcome: z.string().optional(),
  }),
  "approval/requested": approvalRequested,
  "approval/resolved": z.object({
    ...durable,
    approval_id: z.string().min(1),
    decision: z.enum(["allow", "deny"]),
    scope: z.enum(["once", "session"]),
    by: z.string(),
  }),
  "session/record": z.object({ ...durable }),
  "item/delta": z.object({
    session: sessionId,
    item_id: z.string(),
    kind: z.enum(["text", "reasoning"]),
    text: z.string(),
  }),
  "session/status": z.object({ session: sessionId, status: sessionStatus }),
  /**
   * A record a sub-agent of `session` just wrote to its own journal (`agent`: its label, `a/b`
   * for a grandchild). Transient: it is in the child's journal, not this session's, so it has no
   * seq of this session; a subscriber's replay is followed by each child's journal so far as these.
   */
  "agent/record": z.object({ session: sessionId, agent: z.string().min(1), record: journalRecord }),
} as const;

export type NotificationName = keyof typeof NOTIFICATIONS;
export type NotificationParams<N extends NotificationName> = z.output<(typeof NOTIFICATIONS)[N]>;

/**
 * Notifications that never stand for a record of the session's journal: no seq, no id on an event
 * stream, never part of its replay. (A subscriber's replay is followed by each sub-agent's
 * journal as `agent/record`, read from the child's own journal: server/agent-replay.ts.)
 */
export const TRANSIENT_NOTIFICATIONS: readonly NotificationName[] = [
  "item/delta",
  "session/status",
  "agent/record",
];

/** A notification as it travels, typed by its method. */
export type Notification = {
  [N in NotificationName]: { jsonrpc: "2.0"; method: N; params: NotificationParams<N> };
}[NotificationName];

/** Durable notifications: those with `seq`, `hash` and `record`. */
export type DurableNotification = Extract<Notification, { params: { seq: number } }>;

export const NOTIFICATION_NAMES = Object.keys(NOTIFICATIONS) as NotificationName[];

export function isNotificationName(name: string): name is NotificationName {
  return Object.hasOwn(NOTIFICATIONS, name);
}

export function isDurable(notification: Notification): notification is DurableNotification {
  return "seq" in notification.params;
}
