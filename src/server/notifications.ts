import { sessionSeqId } from "../api/common.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import { canonicalJson } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";

/** A server → client notification: JSON-RPC method and params. */
export interface Notification {
  method: string;
  params: JsonObject;
}

/** The session statuses a client sees. */
export type SessionStatus =
  | "idle"
  | "running"
  | "awaiting_approval"
  | "finished"
  | "stopped"
  | "cancelled"
  | "interrupted"
  | "unknown";

/** How a turn ended, by the record that ended it. */
const TURN_ENDS = {
  "run.finished": "finished",
  "run.stopped": "stopped",
  "run.cancelled": "cancelled",
  "turn.interrupted": "interrupted",
} as const satisfies Partial<Record<AnyRecord["type"], SessionStatus>>;

/**
 * Every durable record of a session becomes exactly one notification, a pure function of the
 * journal: this fold reads the records in order (live, as the engine shows them, or replayed
 * from the journal) and keeps only what the mapping needs from earlier records (the turn, the
 * open model request, each call's name and arguments, each call's approval). Records are
 * brought to their canonical JSON form first (the form the journal line has), so a live
 * notification and its replay are the same bytes.
 */
export class NotificationFold {
  #turn = 0;
  #modelSeq = 0;
  readonly #calls = new Map<string, { name: string; arguments: JsonObject }>();
  /** call id → its latest approval/requested notification's params (approval/list shows them). */
  readonly #approvals = new Map<string, JsonObject>();
  readonly #decided = new Set<string>();
  #ended: SessionStatus | undefined;
  #outcome: string | undefined;
  /** -1 before the first record (journal seqs start at 0). */
  #lastSeq = -1;
  #lastHash: string | null = null;

  constructor(readonly session: string) {}

  /** The latest turn started (0 before the first). */
  get turn(): number {
    return this.#turn;
  }

  /** The seq of the latest model.started: the id of the model item text deltas belong to. */
  get modelSeq(): number {
    return this.#modelSeq;
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }

  get head(): { seq: number; hash: string } | null {
    return this.#lastHash === null ? null : { seq: this.#lastSeq, hash: this.#lastHash };
  }

  /** How the latest turn ended (undefined while none has ended or a new one started). */
  get ended(): SessionStatus | undefined {
    return this.#ended;
  }

  /** How the latest turn ended in one word (verified, unverified, a stop's reason); undefined like `ended`. */
  get outcome(): string | undefined {
    return this.#outcome;
  }

  /** Whether this approval was decided in the journal. */
  decided(approvalId: string): boolean {
    return this.#decided.has(approvalId);
  }

  /** The latest approval asked for this call, as its approval/requested notification's params. */
  approvalOf(callId: string): JsonObject | undefined {
    return this.#approvals.get(callId);
  }

  next(live: AnyRecord): Notification {
    const record = JSON.parse(canonicalJson(live)) as AnyRecord;
    this.#lastSeq = record.seq;
    this.#lastHash = record.hash;
    const base: JsonObject = {
      session: this.session,
      seq: record.seq,
      hash: record.hash,
      record: record as unknown as JsonObject,
    };
    const note = (method: string, extra: JsonObject): Notification => ({
      method,
      params: { ...base, ...extra },
    });
    switch (record.type) {
      case "user.input": {
        // Every turn starts with a user.input, the goal's (turn 1) right after session.started:
        // that record is the turn's start, so a client reading from seq 1 sees turn 1 begin.
        const turn = record.data.turn ?? this.#turn + 1;
        this.#turn = turn;
        this.#ended = undefined;
        this.#outcome = undefined;
        return note("turn/started", { turn, input: record.data.text });
      }
      case "model.started":
        this.#modelSeq = record.seq;
        return note("item/started", { item: { kind: "model", id: `model:${record.seq}` } });
      case "model.reply":
        for (const call of record.data.calls)
          this.#calls.set(call.id, { name: call.name, arguments: call.arguments });
        return note("item/completed", {
          item: {
            kind: "model",
            id: `model:${this.#modelSeq}`,
            text: record.data.text,
            calls: record.data.calls.map((call) => ({ id: call.id, name: call.name })),
          },
        });
      case "tool.started":
        this.#calls.set(record.data.call_id, { name: record.data.name, arguments: record.data.arguments });
        return note("item/started", {
          item: {
            kind: "tool",
            id: record.data.call_id,
            tool: record.data.name,
            arguments: record.data.arguments,
          },
        });
      case "tool.result":
        // The call is over: its arguments and approval are no longer asked for (a long session's
        // fold stays flat; a replay folds them again from the journal).
        this.#calls.delete(record.data.call_id);
        this.#approvals.delete(record.data.call_id);
        return note("item/completed", {
          item: {
            kind: "tool",
            id: record.data.call_id,
            tool: record.data.name,
            status: record.data.status,
            summary: record.data.summary,
          },
        });
      case "acceptance.checked":
        return note("item/completed", {
          item: {
            kind: "acceptance",
            id: `acceptance:${record.seq}`,
            ...(record.data as unknown as JsonObject),
          },
        });
      case "run.finished":
      case "run.stopped":
      case "run.cancelled":
      case "turn.interrupted": {
        const status = TURN_ENDS[record.type];
        this.#ended = status;
        this.#outcome = outcomeOf(record);
        return note("turn/completed", { turn: this.#turn, status, outcome: this.#outcome });
      }
      case "approval.requested": {
        const requested = note("approval/requested", {
          approval_id: sessionSeqId(this.session, record.seq),
          call_id: record.data.call_id,
          tool: record.data.name,
          effect: record.data.effect,
          arguments: this.#calls.get(record.data.call_id)?.arguments ?? {},
        });
        this.#approvals.set(record.data.call_id, requested.params);
        return requested;
      }
      case "approval.decided": {
        const approvalId = String(
          this.#approvals.get(record.data.call_id)?.approval_id ?? `${this.session}:unknown`,
        );
        this.#decided.add(approvalId);
        return note("approval/resolved", {
          approval_id: approvalId,
          decision: record.data.decision,
          scope: record.data.scope,
          by: record.data.by,
        });
      }
      default:
        return note("session/record", {});
    }
  }
}

/** The notifications of a journal from `fromSeq` on (the fold reads every record before it too). */
export function replay(session: string, records: readonly AnyRecord[], fromSeq: number): Notification[] {
  return [...replayed(session, records, fromSeq)];
}

/** The same, one notification at a time: a reader that is slow to take them holds no copy of the rest. */
export function* replayed(
  session: string,
  records: readonly AnyRecord[],
  fromSeq: number,
): Generator<Notification, void, undefined> {
  const fold = new NotificationFold(session);
  for (const record of records) {
    const notification = fold.next(record);
    if (record.seq >= fromSeq) yield notification;
  }
}

/** How a turn ended, in one word: verified/unverified, the stop's reason (or review status), the cancel/interrupt reason. */
function outcomeOf(
  record: Extract<AnyRecord, { type: "run.finished" | "run.stopped" | "run.cancelled" | "turn.interrupted" }>,
): string {
  switch (record.type) {
    case "run.finished":
      return record.data.status;
    case "run.stopped":
      return record.data.status === "stopped" ? record.data.reason : record.data.status;
    default:
      return record.data.reason;
  }
}
