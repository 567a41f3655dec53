import { denialRuleIn, type FinishStatus } from "../../../packs/reservations/status.js";
import { deriveKey, type ReservationTask, taskFromGoal } from "../../../packs/reservations/task.js";
import type { ModelMessage } from "../../../protocol/types.js";
import type { HttpJsonAction } from "../../../providers/http-json.js";
import type { ScriptFunction } from "../../../providers/scripted/script.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../../../shared/json.js";

/**
 * Decision sources for reservation tasks. They only PROPOSE the next action from what the
 * session has observed; the executor (schema, permission policy, transaction) decides whether
 * anything happens. The default is a deterministic workflow:
 *   search → document → stock → (reserve) → finish <status>
 * with no language understanding: the query is the task's literal query.
 */

/** One action: a tool call or the end of the run (the reply text is exactly the status word). */
export type Action =
  | { kind: "tool"; name: string; args: JsonObject }
  | { kind: "finish"; status: FinishStatus };

/** A tool observation as the decision source sees it (from the projected messages only). */
export interface Observation {
  name: string;
  status: string;
  /** The result JSON when the tool succeeded; undefined for error observations. */
  data: JsonObject | undefined;
  /** The observation text (for errors: code, message and hint). */
  text: string;
}

/** The task recorded in the first user message, or undefined. */
export function taskOf(messages: readonly ModelMessage[]): ReservationTask | undefined {
  const first = messages.find((m) => m.role === "user");
  return first?.role === "user" ? taskFromGoal(first.content) : undefined;
}

export function observationsOf(messages: readonly ModelMessage[]): Observation[] {
  const out: Observation[] = [];
  for (const message of messages) {
    if (message.role !== "tool") continue;
    out.push({
      name: message.name,
      status: message.status,
      data: message.status === "ok" ? parseObject(message.content) : undefined,
      text: message.content,
    });
  }
  return out;
}

function parseObject(text: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Stale-revision conflicts the workflow re-reads stock for before giving up. */
const MAX_CONFLICT_RETRIES = 1;

/** The deterministic workflow: the next action for a task given the observations so far. */
export function nextAction(task: ReservationTask, observations: readonly Observation[]): Action {
  const search = lastIndexOf(observations, (o) => o.name === "search");
  if (search < 0) return tool("search", { query: task.query });
  const searched = observations[search]!;
  if (searched.status !== "ok" || !searched.data) return finish("policy_error");
  const outcome = searched.data.outcome;
  if (outcome === "not_found" || outcome === "ambiguous") return finish(outcome);
  const itemId = uniqueHit(searched.data);
  if (outcome !== "unique" || itemId === undefined) return finish("policy_error");

  const document = lastIndexOf(observations, (o) => o.name === "document");
  if (document < 0) return tool("document", { item_id: itemId });
  if (observations[document]!.status !== "ok") return finish("policy_error");

  const stock = lastIndexOf(observations, (o) => o.name === "stock");
  if (stock < 0) return tool("stock", { item_id: itemId });
  const stocked = observations[stock]!;
  const revision = stocked.data?.revision;
  if (stocked.status !== "ok" || typeof revision !== "number") return finish("policy_error");
  if (task.mode === "info") return finish("info");

  const reserve = lastIndexOf(observations, (o) => o.name === "reserve");
  if (reserve < stock) {
    return tool("reserve", {
      item_id: itemId,
      quantity: task.quantity,
      expected_revision: revision,
      idempotency_key: deriveKey(task, itemId, task.quantity),
    });
  }
  const reserved = observations[reserve]!;
  if (reserved.status === "ok") {
    const result = reserved.data?.outcome;
    if (result === "reserved" || result === "insufficient") return finish(result);
    return finish("policy_error");
  }
  if (reserved.status === "denied") {
    return finish(denialRuleIn(reserved.text) === "write_not_allowed" ? "denied" : "policy_error");
  }
  const conflicts = observations.filter((o) => o.name === "reserve" && o.status === "conflict").length;
  if (reserved.status === "conflict" && conflicts <= MAX_CONFLICT_RETRIES) {
    return tool("stock", { item_id: itemId });
  }
  return finish("policy_error");
}

function uniqueHit(data: JsonObject): string | undefined {
  const hits = data.hits;
  if (!Array.isArray(hits) || hits.length !== 1) return undefined;
  const hit: JsonValue | undefined = hits[0];
  return isJsonObject(hit) && typeof hit.id === "string" ? hit.id : undefined;
}

function lastIndexOf(observations: readonly Observation[], match: (o: Observation) => boolean): number {
  for (let i = observations.length - 1; i >= 0; i--) if (match(observations[i]!)) return i;
  return -1;
}

function tool(name: string, args: JsonObject): Action {
  return { kind: "tool", name, args };
}

function finish(status: FinishStatus): Action {
  return { kind: "finish", status };
}

/** A decision source: the next action from the projected messages. */
export type DecisionPolicy = (messages: readonly ModelMessage[]) => Action;

/** The default workflow policy over projected messages; a message list without a task is a policy error. */
export const workflowPolicy: DecisionPolicy = (messages) => {
  const task = taskOf(messages);
  if (!task) return finish("policy_error");
  return nextAction(task, observationsOf(messages));
};

/**
 * An untrusted decision source for the over-reach case: it proposes a reservation at once,
 * without search, document or stock, with a made-up key, then claims success regardless.
 */
export const overreachPolicy: DecisionPolicy = (messages) => {
  if (observationsOf(messages).some((o) => o.name === "reserve")) return finish("reserved");
  return tool("reserve", {
    item_id: "camera",
    quantity: 1,
    expected_revision: 0,
    idempotency_key: "a".repeat(64),
  });
};

/**
 * The workflow, except that its reservation carries `quantity` (a malformed value such as true,
 * 1.5, "1" or 11): the schema must reject it before anything runs.
 */
export function badQuantityPolicy(quantity: JsonValue): DecisionPolicy {
  return (messages) => {
    const action = workflowPolicy(messages);
    if (action.kind === "tool" && action.name === "reserve") {
      return tool("reserve", { ...action.args, quantity });
    }
    return action;
  };
}

/** A ScriptedProvider function that plays a decision policy (one call per reply). */
export function scriptFor(policy: DecisionPolicy): ScriptFunction {
  return (messages, step) => {
    const action = policy(messages);
    if (action.kind === "finish") return { text: action.status };
    return { text: "", calls: [{ id: `call-${step}`, name: action.name, arguments: action.args }] };
  };
}

/** The http-json wire form of an action (`{kind,name,args}` or `{kind,status}`). */
export function toHttpAction(action: Action): HttpJsonAction {
  return action.kind === "tool"
    ? { kind: "tool", name: action.name, args: action.args }
    : { kind: "finish", status: action.status };
}

/** What a policy server answers for a request body `{messages, tools}` (already parsed). */
export function httpActionFor(
  policy: DecisionPolicy,
  body: { messages: readonly ModelMessage[] },
): HttpJsonAction {
  return toHttpAction(policy(body.messages));
}
