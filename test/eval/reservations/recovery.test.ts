import { afterEach, describe, expect, it } from "vitest";
import { workflowPolicy } from "../../../src/eval/suites/reservations/workflow.js";
import type { AnyRecord } from "../../../src/journal/vocabulary.js";
import { createReserveTool, reserveInput } from "../../../src/packs/reservations/tools.js";
import { toolContext } from "../../reservations/helpers.js";
import { type Harness, makeTask, reservationHarness } from "./harness.js";

class Crash extends Error {}

let harness: Harness | undefined;
afterEach(() => harness?.db.close());

/** Run until reserve's tool.started is durable, then die before its handler runs. */
async function crashAtReserve(h: Harness): Promise<void> {
  const run = h.run(workflowPolicy, {
    listener: {
      record(record: AnyRecord) {
        if (record.type === "tool.started" && record.data.name === "reserve") throw new Crash("crash");
      },
    },
  });
  await expect(run).rejects.toBeInstanceOf(Crash);
  expect(await h.results("reserve")).toEqual([]);
  expect(h.db.ledger()).toEqual([]);
}

async function startedReserveArgs(h: Harness) {
  const started = (await h.records()).find((r) => r.type === "tool.started" && r.data.name === "reserve");
  if (started?.type !== "tool.started") throw new Error("no reserve started");
  return reserveInput.parse(started.data.arguments);
}

describe("interruption between tool.started and tool.result of reserve", () => {
  it("the transaction committed: resume reconciles from the ledger, never re-executes, ends reserved", async () => {
    const h = reservationHarness(makeTask({ query: "tripod", quantity: 2 }));
    harness = h;
    await crashAtReserve(h);
    // The transaction committed just before the crash.
    const committed = await createReserveTool(h.db).execute(await startedReserveArgs(h), toolContext());

    const summary = await h.run(workflowPolicy, { mode: "resume" });

    expect(summary).toMatchObject({ status: "verified", answer: "reserved" });
    const reserves = await h.results("reserve");
    expect(reserves).toHaveLength(1);
    expect(reserves[0]).toMatchObject({
      status: "ok",
      data: { outcome: "reserved", receipt: committed.data?.receipt, reconciled: true },
    });
    expect(await h.starts("reserve")).toBe(1);
    expect(h.db.ledger()).toHaveLength(1);
    expect(h.db.stockLevels()).toEqual({ camera: 3, microscope: 2, tripod: 2 });
  });

  it("nothing committed: the outcome stays unknown and the run needs review; nothing is replayed", async () => {
    const h = reservationHarness(makeTask());
    harness = h;
    await crashAtReserve(h);

    const summary = await h.run(workflowPolicy, { mode: "resume" });

    expect(summary.status).toBe("review_required");
    const reserves = await h.results("reserve");
    expect(reserves).toEqual([expect.objectContaining({ status: "unknown", error_type: "UNKNOWN_OUTCOME" })]);
    expect(await h.starts("reserve")).toBe(1);
    expect(h.db.ledger()).toEqual([]);
    expect(h.db.stockLevels()).toEqual({ camera: 3, microscope: 2, tripod: 4 });
  });
});
