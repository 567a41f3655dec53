import { z } from "zod";

/**
 * Pieces the methods and the notifications share. The journal record is described generically
 * here (api sits below journal/ and must not import it): a record is forwarded exactly as journaled,
 * and whoever wants to check its chain verifies `prev`/`hash`/`mac` itself.
 */

export const PROTOCOL_VERSION = 1;

export const sessionId = z.string().min(1);
/** Journal seqs start at 0 (session.started). */
export const seq = z.number().int().nonnegative();

export const journalRecord = z.object({
  seq: z.number().int().nonnegative(),
  type: z.string().min(1),
  time: z.string(),
  data: z.record(z.string(), z.unknown()),
  prev: z.string(),
  hash: z.string(),
  mac: z.string().optional(),
});
export type JournalRecord = z.infer<typeof journalRecord>;

export const SESSION_STATUSES = [
  "idle",
  "running",
  "awaiting_approval",
  "finished",
  "stopped",
  "cancelled",
  "interrupted",
  "unknown",
] as const;
export const sessionStatus = z.enum(SESSION_STATUSES);
export type SessionStatus = z.infer<typeof sessionStatus>;

export const APPROVAL_DECISIONS = ["accept", "accept_session", "decline"] as const;
export const approvalDecision = z.enum(APPROVAL_DECISIONS);
export type ApprovalDecision = z.infer<typeof approvalDecision>;

/** Every durable notification starts with these: which session, which record, its hash, the record itself. */
export const durable = {
  session: sessionId,
  seq,
  hash: z.string(),
  record: journalRecord,
};

/** Tool arguments as the model gave them: a JSON object. */
export const toolArguments = z.record(z.string(), z.unknown());

/** `approval/requested`'s params, also what `approval/list` returns for each pending approval. */
export const approvalRequested = z.object({
  ...durable,
  approval_id: z.string().min(1),
  call_id: z.string(),
  tool: z.string(),
  effect: z.string(),
  arguments: toolArguments,
});
export type ApprovalRequested = z.infer<typeof approvalRequested>;

/**
 * `SESSION:SEQ`: how an approval is named (SEQ = its approval.requested record) and how an SSE
 * event is named (SEQ = the notification's record). Deterministic, so a replay names things as
 * the live stream did. A session id may hold ":": the seq is what follows the last one.
 */
export function sessionSeqId(session: string, seq: number): string {
  return `${session}:${seq}`;
}

export function parseSessionSeqId(id: string): { session: string; seq: number } | undefined {
  const colon = id.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const digits = id.slice(colon + 1);
  if (!/^(0|[1-9][0-9]{0,15})$/.test(digits)) return undefined;
  const seq = Number(digits);
  return Number.isSafeInteger(seq) ? { session: id.slice(0, colon), seq } : undefined;
}
