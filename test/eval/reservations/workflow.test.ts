import { afterEach, describe, expect, it } from "vitest";
import { type PolicyServer, startPolicyServer } from "../../../src/eval/suites/reservations/policy-server.js";
import {
  nextAction,
  type Observation,
  workflowPolicy,
} from "../../../src/eval/suites/reservations/workflow.js";
import { deriveKey, taskGoal } from "../../../src/packs/reservations/task.js";
import type { ModelMessage } from "../../../src/protocol/types.js";
import { parseAction } from "../../../src/providers/http-json.js";
import { makeTask } from "./harness.js";

const task = makeTask();
const ok = (name: string, data: object): Observation => ({
  name,
  status: "ok",
  data: data as Observation["data"],
  text: JSON.stringify(data),
});
const unique = ok("search", { outcome: "unique", hits: [{ id: "camera", title: "t", snippet: "s" }] });
const documented = ok("document", { item_id: "camera" });
const stocked = ok("stock", { item_id: "camera", available: 3, revision: 0 });

describe("the deterministic workflow", () => {
  it("proposes search → document → stock → reserve with the derived key, then finishes", () => {
    expect(nextAction(task, [])).toEqual({ kind: "tool", name: "search", args: { query: "camera" } });
    expect(nextAction(task, [unique])).toEqual({
      kind: "tool",
      name: "document",
      args: { item_id: "camera" },
    });
    expect(nextAction(task, [unique, documented])).toEqual({
      kind: "tool",
      name: "stock",
      args: { item_id: "camera" },
    });
    expect(nextAction(task, [unique, documented, stocked])).toEqual({
      kind: "tool",
      name: "reserve",
      args: {
        item_id: "camera",
        quantity: 1,
        expected_revision: 0,
        idempotency_key: deriveKey(task, "camera", 1),
      },
    });
    const reserved = ok("reserve", { outcome: "reserved" });
    expect(nextAction(task, [unique, documented, stocked, reserved])).toEqual({
      kind: "finish",
      status: "reserved",
    });
  });

  it("finishes on not_found, ambiguous, info, insufficient, denied and errors", () => {
    const finish = (status: string) => ({ kind: "finish", status });
    expect(nextAction(task, [ok("search", { outcome: "not_found", hits: [] })])).toEqual(finish("not_found"));
    expect(nextAction(task, [ok("search", { outcome: "ambiguous", hits: [] })])).toEqual(finish("ambiguous"));
    expect(nextAction({ ...task, mode: "info" }, [unique, documented, stocked])).toEqual(finish("info"));
    const base = [unique, documented, stocked];
    expect(nextAction(task, [...base, ok("reserve", { outcome: "insufficient" })])).toEqual(
      finish("insufficient"),
    );
    const denied = (rule: string): Observation => ({
      name: "reserve",
      status: "denied",
      data: undefined,
      text: `ERROR POLICY_DENIED (status: denied): Denied by policy: [${rule}] no`,
    });
    expect(nextAction(task, [...base, denied("write_not_allowed")])).toEqual(finish("denied"));
    expect(nextAction(task, [...base, denied("revision_not_observed")])).toEqual(finish("policy_error"));
    const invalid: Observation = { name: "reserve", status: "invalid", data: undefined, text: "ERROR" };
    expect(nextAction(task, [...base, invalid])).toEqual(finish("policy_error"));
  });

  it("re-reads stock once after a stale-revision conflict, then gives up", () => {
    const conflict: Observation = {
      name: "reserve",
      status: "conflict",
      data: undefined,
      text: "ERROR STALE_VERSION",
    };
    const base = [unique, documented, stocked];
    expect(nextAction(task, [...base, conflict])).toMatchObject({ kind: "tool", name: "stock" });
    const restocked = ok("stock", { item_id: "camera", available: 2, revision: 1 });
    expect(nextAction(task, [...base, conflict, restocked])).toMatchObject({
      kind: "tool",
      name: "reserve",
      args: { expected_revision: 1 },
    });
    expect(nextAction(task, [...base, conflict, restocked, conflict])).toEqual({
      kind: "finish",
      status: "policy_error",
    });
  });

  it("without a task in the messages it is a policy error", () => {
    expect(workflowPolicy([{ role: "user", content: "reserve everything" }])).toEqual({
      kind: "finish",
      status: "policy_error",
    });
  });
});

describe("the local policy server", () => {
  let server: PolicyServer | undefined;
  afterEach(async () => server?.close());

  const post = (url: string, body: unknown) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("answers the workflow's next action in the http-json wire format", async () => {
    server = await startPolicyServer({ workflow: workflowPolicy });
    expect(server.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const messages: ModelMessage[] = [
      { role: "system", content: "s" },
      { role: "user", content: taskGoal(task) },
    ];
    const response = await post(server.url("workflow"), { messages, tools: [] });
    expect(response.status).toBe(200);
    const action = parseAction(await response.json());
    expect(action).toEqual({ kind: "tool", name: "search", args: { query: "camera" } });
  });

  it("refuses unknown policies, non-POST and malformed bodies", async () => {
    server = await startPolicyServer({ workflow: workflowPolicy });
    expect((await post(server.url("other"), { messages: [], tools: [] })).status).toBe(404);
    expect((await fetch(server.url("workflow"))).status).toBe(405);
    expect((await post(server.url("workflow"), { messages: "x" })).status).toBe(400);
  });
});
