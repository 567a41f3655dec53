import { describe, expect, it } from "vitest";
import { parseTask, TaskError } from "../../src/packs/reservations/task.js";
import { documentInput, reserveInput, searchInput, stockInput } from "../../src/packs/reservations/tools.js";

const KEY = "a".repeat(64);
const valid = { item_id: "camera", quantity: 1, expected_revision: 0, idempotency_key: KEY };

describe("reserve arguments", () => {
  it("accepts exactly the four fields with an integer quantity 1..10", () => {
    expect(reserveInput.parse(valid)).toEqual(valid);
    expect(reserveInput.parse({ ...valid, quantity: 10 }).quantity).toBe(10);
  });

  it.each([
    ["true", true],
    ["1.5", 1.5],
    ['"1"', "1"],
    ["11", 11],
    ["0", 0],
    ["-1", -1],
    ["null", null],
  ])("rejects quantity %s without coercion", (_, quantity) => {
    const parsed = reserveInput.safeParse({ ...valid, quantity });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(["quantity"]);
  });

  it("rejects an extra field, a missing field and a malformed key", () => {
    expect(reserveInput.safeParse({ ...valid, path: "/tmp/secret" }).error?.issues[0]?.code).toBe(
      "unrecognized_keys",
    );
    const { idempotency_key: _, ...missing } = valid;
    expect(reserveInput.safeParse(missing).success).toBe(false);
    expect(reserveInput.safeParse({ ...valid, idempotency_key: "attack" }).success).toBe(false);
    expect(reserveInput.safeParse({ ...valid, expected_revision: "0" }).success).toBe(false);
  });

  it("read tools take exactly their one field", () => {
    expect(searchInput.safeParse({ query: "camera" }).success).toBe(true);
    expect(searchInput.safeParse({ query: "   " }).success).toBe(false);
    expect(searchInput.safeParse({ query: "camera", limit: 1 }).success).toBe(false);
    expect(stockInput.safeParse({ item_id: "camera", path: "/tmp/secret" }).success).toBe(false);
    expect(documentInput.safeParse({}).success).toBe(false);
    expect(documentInput.safeParse({ item_id: "../etc" }).success).toBe(false);
  });
});

describe("tasks", () => {
  const task = {
    id: "t1",
    query: "camera",
    mode: "reserve",
    quantity: 1,
    allow_write: true,
    max_tool_calls: 8,
  };

  it("parses a well-formed task", () => {
    expect(parseTask(task)).toEqual(task);
  });

  it.each([
    ["quantity true", { ...task, quantity: true }],
    ["quantity 1.5", { ...task, quantity: 1.5 }],
    ['quantity "1"', { ...task, quantity: "1" }],
    ["quantity 11", { ...task, quantity: 11 }],
    ["unknown mode", { ...task, mode: "delete" }],
    ['allow_write "yes"', { ...task, allow_write: "yes" }],
    ["blank query", { ...task, query: "  " }],
    ["an extra field", { ...task, priority: "high" }],
    ["a missing field", { id: "t1", query: "camera", mode: "info", quantity: 1, allow_write: false }],
  ])("rejects %s", (_, value) => {
    expect(() => parseTask(value)).toThrow(TaskError);
  });
});
