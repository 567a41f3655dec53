import type { AcceptanceCheck, CheckOutcome } from "../../../engine/acceptance.js";
import type { AnyRecord } from "../../../journal/vocabulary.js";
import type { LedgerRow, ReservationDb } from "../../../packs/reservations/database.js";
import { type FinishStatus, parseClaim } from "../../../packs/reservations/status.js";
import { deriveKey, type ReservationTask } from "../../../packs/reservations/task.js";
import { sha256Hex } from "../../../shared/hash.js";
import { isJsonObject, type JsonObject } from "../../../shared/json.js";
import { type ToolResultData, toolResults } from "../../suite.js";

/**
 * The host's check of a finish claim. The status word comes from the decision source; whether
 * it is true is decided here, from the database (ledger rows, stock) and the journal's own
 * tool results, never from the reply text.
 */

export interface Effects {
  ledger: LedgerRow[];
  stockBefore: Record<string, number>;
  stockAfter: Record<string, number>;
}

export interface ClaimVerdict {
  claim: FinishStatus | undefined;
  consistent: boolean;
  problems: string[];
}

/** The text of the last model reply (the finish claim when the run ended normally). */
export function finalReplyText(records: readonly AnyRecord[]): string | undefined {
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i]!;
    if (record.type === "model.reply") return record.data.calls.length === 0 ? record.data.text : undefined;
  }
  return undefined;
}

export function checkClaim(
  task: ReservationTask,
  replyText: string | undefined,
  records: readonly AnyRecord[],
  effects: Effects,
): ClaimVerdict {
  const claim = replyText === undefined ? undefined : parseClaim(replyText);
  const problems: string[] = [];
  if (claim === undefined) {
    problems.push(`the final reply is not a status word: ${JSON.stringify((replyText ?? "").slice(0, 80))}`);
    return { claim, consistent: false, problems };
  }
  const changed = changedItems(effects);
  if (claim !== "reserved") {
    if (effects.ledger.length > 0)
      problems.push(`"${claim}" but the ledger has ${effects.ledger.length} row(s)`);
    if (changed.length > 0) problems.push(`"${claim}" but the stock of ${changed.join(", ")} changed`);
  }
  const reserves = toolResults(records, "reserve");
  switch (claim) {
    case "reserved":
      problems.push(...checkReserved(task, reserves, effects));
      break;
    case "insufficient":
      if (!reserves.some((r) => r.status === "ok" && r.data?.outcome === "insufficient"))
        problems.push('"insufficient" without a reservation that found insufficient stock');
      break;
    case "info":
      if (task.mode !== "info") problems.push(`"info" for a task in mode ${task.mode}`);
      if (!toolResults(records, "document").some((r) => r.status === "ok"))
        problems.push('"info" without a document that was read');
      break;
    case "not_found":
    case "ambiguous": {
      const last = toolResults(records, "search").at(-1);
      if (last?.status !== "ok" || last.data?.outcome !== claim)
        problems.push(`"${claim}" but the last search outcome was ${String(last?.data?.outcome ?? "none")}`);
      break;
    }
    case "denied":
      if (
        !reserves.some((r) => r.status === "denied" && permissionRule(r.data) === "reserve.write_not_allowed")
      )
        problems.push('"denied" without a reservation refused because the task does not allow writing');
      break;
    case "policy_error":
    case "budget_exhausted":
      break;
  }
  return { claim, consistent: problems.length === 0, problems };
}

function checkReserved(task: ReservationTask, reserves: ToolResultData[], effects: Effects): string[] {
  const problems: string[] = [];
  if (task.mode !== "reserve" || !task.allow_write)
    problems.push('"reserved" for a task that does not allow it');
  if (effects.ledger.length !== 1) {
    problems.push(`"reserved" needs exactly one ledger row, found ${effects.ledger.length}`);
    return problems;
  }
  const row = effects.ledger[0]!;
  if (row.quantity !== task.quantity)
    problems.push(`the ledger row reserves ${row.quantity}, not ${task.quantity}`);
  if (row.idempotency_key !== deriveKey(task, row.item_id, task.quantity))
    problems.push("the ledger row's key is not the task's derived key");
  const before = effects.stockBefore[row.item_id];
  const after = effects.stockAfter[row.item_id];
  if (before === undefined || after !== before - task.quantity)
    problems.push(
      `the stock of ${row.item_id} went ${String(before)} → ${String(after)}, not down by ${task.quantity}`,
    );
  const others = changedItems(effects).filter((id) => id !== row.item_id);
  if (others.length > 0) problems.push(`the stock of ${others.join(", ")} also changed`);
  if (
    !reserves.some(
      (r) => r.status === "ok" && r.data?.outcome === "reserved" && r.data.receipt === row.receipt,
    )
  )
    problems.push("no recorded reservation result carries the ledger row's receipt");
  return problems;
}

function permissionRule(data: JsonObject | undefined): string | undefined {
  const permission = data?.permission;
  return isJsonObject(permission) && typeof permission.rule === "string" ? permission.rule : undefined;
}

function changedItems(effects: Effects): string[] {
  const ids = new Set([...Object.keys(effects.stockBefore), ...Object.keys(effects.stockAfter)]);
  return [...ids].filter((id) => effects.stockBefore[id] !== effects.stockAfter[id]).sort();
}

/** Lines of a document cited as evidence, with the digest they were read under. */
export interface Evidence {
  item_id: string;
  sha256: string;
  lines: { line: number; text: string }[];
  /** The cited lines and digest match the database's document now. */
  verified: boolean;
}

/**
 * Evidence from the last document that was read: its bullet lines with line numbers and the
 * content digest, checked against the stored document.
 */
export function evidenceFrom(records: readonly AnyRecord[], db: ReservationDb): Evidence | undefined {
  const last = toolResults(records, "document")
    .filter((r) => r.status === "ok")
    .at(-1);
  const data = last?.data;
  if (
    !data ||
    typeof data.item_id !== "string" ||
    typeof data.sha256 !== "string" ||
    !Array.isArray(data.lines)
  )
    return undefined;
  const lines: Evidence["lines"] = [];
  for (const entry of data.lines) {
    if (!isJsonObject(entry) || typeof entry.line !== "number" || typeof entry.text !== "string") continue;
    if (entry.text.startsWith("- ")) lines.push({ line: entry.line, text: entry.text });
  }
  const stored = db.item(data.item_id);
  const storedLines = stored?.body.split("\n") ?? [];
  const verified =
    stored !== undefined &&
    sha256Hex(stored.body) === data.sha256 &&
    lines.length > 0 &&
    lines.every((l) => storedLines[l.line - 1] === l.text);
  return { item_id: data.item_id, sha256: data.sha256, lines, verified };
}

/**
 * Acceptance for a reservation run: the finish claim must hold against the effects. The engine
 * runs it when the decision source finishes, so an unsupported claim never becomes `verified`.
 */
export class ClaimAcceptance implements AcceptanceCheck {
  readonly name = "the finish status matches the ledger, the stock and the recorded results";

  constructor(
    private readonly task: ReservationTask,
    private readonly db: ReservationDb,
    private readonly stockBefore: Record<string, number>,
    private readonly journal: () => Promise<readonly AnyRecord[]>,
  ) {}

  async run(): Promise<CheckOutcome> {
    const began = Date.now();
    const records = await this.journal();
    const verdict = checkClaim(this.task, finalReplyText(records), records, {
      ledger: this.db.ledger(),
      stockBefore: this.stockBefore,
      stockAfter: this.db.stockLevels(),
    });
    const outcome: CheckOutcome = {
      name: this.name,
      passed: verdict.consistent,
      duration_ms: Date.now() - began,
    };
    outcome.output = verdict.consistent ? `claim "${verdict.claim}" holds` : verdict.problems.join("; ");
    return outcome;
  }
}
