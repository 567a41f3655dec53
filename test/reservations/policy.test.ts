import { describe, expect, it } from "vitest";
import { TaskPermissionPolicy } from "../../src/packs/reservations/policy.js";
import { deriveKey, type ReservationTask } from "../../src/packs/reservations/task.js";
import type { HistoryEntry, PermissionRequest } from "../../src/runtime/ports.js";
import type { JsonObject } from "../../src/shared/json.js";
import { CAMERA_TASK, documented, FULL, reserveArgs, searched, stocked } from "./helpers.js";

const task = CAMERA_TASK;

function decide(args: JsonObject, history: readonly HistoryEntry[], forTask: ReservationTask = task) {
  const request: PermissionRequest = {
    tool: "reserve",
    effect: "external_side_effect",
    arguments: args,
    history,
  };
  return new TaskPermissionPolicy(forTask).decide(request);
}

describe("the executor policy", () => {
  it("allows reads and a reserve that matches every observation", () => {
    const policy = new TaskPermissionPolicy(task);
    expect(policy.decide({ tool: "search", effect: "read_only", arguments: { query: "x" } }).decision).toBe(
      "allow",
    );
    expect(decide(reserveArgs(), FULL)).toMatchObject({ decision: "allow", rule: "reserve.authorized" });
  });

  it.each<[string, JsonObject, readonly HistoryEntry[], ReservationTask?]>([
    ["out_of_scope", reserveArgs(), FULL, { ...task, mode: "info" }],
    ["write_not_allowed", reserveArgs(), FULL, { ...task, allow_write: false }],
    ["bad_arguments", reserveArgs({ quantity: true }), FULL],
    ["quantity_mismatch", reserveArgs({ quantity: 2 }), FULL],
    ["no_unique_hit", reserveArgs(), [documented, stocked]],
    [
      "no_unique_hit",
      reserveArgs(),
      [{ ...searched, data: { outcome: "ambiguous", hits: [] } }, documented, stocked],
    ],
    ["no_unique_hit", reserveArgs(), [{ ...searched, arguments: { query: "kit" } }, documented, stocked]],
    [
      "item_not_from_search",
      reserveArgs({ item_id: "tripod", idempotency_key: deriveKey(task, "tripod", 1) }),
      [
        searched,
        { ...documented, arguments: { item_id: "tripod" } },
        { ...stocked, arguments: { item_id: "tripod" } },
      ],
    ],
    ["document_not_read", reserveArgs(), [searched, stocked]],
    ["stock_not_observed", reserveArgs(), [searched, documented]],
    ["stock_not_observed", reserveArgs(), [searched, documented, { ...stocked, status: "error", data: {} }]],
    ["revision_not_observed", reserveArgs({ expected_revision: 1 }), FULL],
    ["idempotency_key_mismatch", reserveArgs({ idempotency_key: "a".repeat(64) }), FULL],
    [
      "idempotency_key_mismatch",
      reserveArgs({ idempotency_key: deriveKey({ id: "other" }, "camera", 1) }),
      FULL,
    ],
  ])("denies %s with a precise rule", (rule, args, history, forTask) => {
    const decision = decide(args, history, forTask ?? task);
    expect(decision).toMatchObject({
      decision: "deny",
      rule: `reserve.${rule}`,
      source: "task:reserve-camera",
    });
    expect(decision.reason.startsWith(`[${rule}] `)).toBe(true);
  });

  it("judges the latest stock observation, not an older one", () => {
    const newer = { ...stocked, call_id: "c3", data: { item_id: "camera", available: 2, revision: 1 } };
    expect(decide(reserveArgs(), [...FULL, newer]).rule).toBe("reserve.revision_not_observed");
    expect(decide(reserveArgs({ expected_revision: 1 }), [...FULL, newer]).decision).toBe("allow");
  });

  it("denies a missing history and unknown tools", () => {
    expect(
      new TaskPermissionPolicy(task).decide({
        tool: "reserve",
        effect: "external_side_effect",
        arguments: reserveArgs(),
      }).rule,
    ).toBe("reserve.no_unique_hit");
    expect(
      new TaskPermissionPolicy(task).decide({ tool: "shell", effect: "process_execution", arguments: {} })
        .decision,
    ).toBe("deny");
  });

  it("records the task in its description and digest", () => {
    const a = new TaskPermissionPolicy(task);
    const b = new TaskPermissionPolicy({ ...task, allow_write: false });
    expect(a.describe).toMatchObject({ kind: "reservation-task", task });
    expect(a.digest).not.toBe(b.digest);
  });
});
