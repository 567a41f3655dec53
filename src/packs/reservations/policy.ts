import type {
  HistoryEntry,
  PermissionDecision,
  PermissionPort,
  PermissionRequest,
} from "../../runtime/ports.js";
import { digestOf } from "../../shared/hash.js";
import { isJsonObject, type JsonObject } from "../../shared/json.js";
import { type DenialRule, denialReason } from "./status.js";
import { deriveKey, type ReservationTask } from "./task.js";
import { reserveInput } from "./tools.js";

const READ_TOOLS: ReadonlySet<string> = new Set(["search", "document", "stock"]);

/**
 * The executor's authority for one task. Reads are allowed; `reserve` is allowed only when the
 * task authorizes writing AND the call is exactly what this session's observations support:
 * the item is the unique hit of a search for the task's query, its document was read, its stock
 * was observed at `expected_revision`, the quantity is the task's, and the key is the task's
 * derived key. A decision source (scripted, HTTP, model) cannot widen any of this.
 */
export class TaskPermissionPolicy implements PermissionPort {
  readonly describe: JsonObject;
  readonly digest: string;
  private readonly source: string;

  constructor(private readonly task: ReservationTask) {
    this.describe = { kind: "reservation-task", version: 1, task: { ...task } };
    this.digest = digestOf(this.describe);
    this.source = `task:${task.id}`;
  }

  decide(request: PermissionRequest): PermissionDecision {
    if (READ_TOOLS.has(request.tool)) {
      return { decision: "allow", rule: "read", source: this.source, reason: "reading is allowed" };
    }
    if (request.tool !== "reserve") {
      return this.deny("unknown_tool", `"${request.tool}" is not a tool of this task`);
    }
    return this.decideReserve(request.arguments, request.history ?? []);
  }

  private decideReserve(rawArgs: JsonObject, history: readonly HistoryEntry[]): PermissionDecision {
    const task = this.task;
    if (task.mode !== "reserve")
      return this.deny("out_of_scope", `task ${task.id} only asks for information`);
    if (!task.allow_write) return this.deny("write_not_allowed", `task ${task.id} does not allow writing`);
    const parsed = reserveInput.safeParse(rawArgs);
    if (!parsed.success) return this.deny("bad_arguments", "the reservation arguments do not fit the schema");
    const args = parsed.data;
    if (args.quantity !== task.quantity) {
      return this.deny(
        "quantity_mismatch",
        `quantity ${args.quantity} differs from the task's ${task.quantity}`,
      );
    }
    const search = lastOk(history, "search");
    if (!search || search.arguments.query !== task.query || search.data?.outcome !== "unique") {
      return this.deny("no_unique_hit", `no unique search hit for the task's query "${task.query}"`);
    }
    const hit = uniqueHitId(search.data);
    if (hit !== args.item_id) {
      return this.deny("item_not_from_search", `item "${args.item_id}" is not the task's unique hit`);
    }
    if (!lastOk(history, "document", args.item_id)) {
      return this.deny("document_not_read", `the document of "${args.item_id}" was not read`);
    }
    const stock = lastOk(history, "stock", args.item_id);
    if (!stock) return this.deny("stock_not_observed", `the stock of "${args.item_id}" was not observed`);
    if (stock.data?.revision !== args.expected_revision) {
      return this.deny(
        "revision_not_observed",
        `expected_revision ${args.expected_revision} is not the observed revision ${String(stock.data?.revision)}`,
      );
    }
    if (args.idempotency_key !== deriveKey(task, args.item_id, args.quantity)) {
      return this.deny("idempotency_key_mismatch", "the idempotency key is not the task's derived key");
    }
    return {
      decision: "allow",
      rule: "reserve.authorized",
      source: this.source,
      reason: `reserve ${args.quantity} × ${args.item_id} at revision ${args.expected_revision} for task ${task.id}`,
    };
  }

  private deny(rule: DenialRule, text: string): PermissionDecision {
    return {
      decision: "deny",
      rule: `reserve.${rule}`,
      source: this.source,
      reason: denialReason(rule, text),
    };
  }
}

/** The latest successful call of a tool (for one item, when given). */
function lastOk(history: readonly HistoryEntry[], tool: string, itemId?: string): HistoryEntry | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const entry = history[i]!;
    if (entry.name !== tool || entry.status !== "ok") continue;
    if (itemId !== undefined && entry.arguments.item_id !== itemId) continue;
    return entry;
  }
  return undefined;
}

function uniqueHitId(data: JsonObject | undefined): string | undefined {
  const hits = data?.hits;
  if (!Array.isArray(hits) || hits.length !== 1) return undefined;
  const [hit] = hits;
  return isJsonObject(hit) && typeof hit.id === "string" ? hit.id : undefined;
}
