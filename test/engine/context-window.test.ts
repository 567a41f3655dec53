import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import type { ModelRequest, Provider } from "../../src/providers/provider.js";
import { Recording, run, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * Token accounting in the engine: every request is estimated before it is sent, the estimate
 * is journaled in model.started, a request over the window minus the reply reserve is never
 * sent, and the calibration by reported input tokens comes from the journal alone.
 */

const BIG = `${"lorem ipsum dolor sit amet ".repeat(150)}\n`;

/** A model that reads big.txt `reads` times, then finishes; it reports input tokens when `report` is given. */
function reader(reads: number, report?: (request: ModelRequest) => number): Provider {
  return {
    identity: { kind: "test", model: "reader" },
    async *stream(request: ModelRequest) {
      if (request.purpose === "compaction") {
        yield { type: "text_delta", text: BIG.repeat(3) };
        yield { type: "end", reason: "stop" };
        return;
      }
      if (request.step < reads) {
        yield {
          type: "tool_call_delta",
          call_id: `read-${request.step}`,
          name: "read_file",
          arguments: JSON.stringify({ path: "big.txt" }),
        };
      } else {
        yield { type: "text_delta", text: "done" };
      }
      if (report) yield { type: "usage", usage: { input_tokens: report(request), output_tokens: 1 } };
      yield { type: "end", reason: request.step < reads ? "tool_calls" : "stop" };
    },
  };
}

/** Roughly what a real tokenizer might count: a deterministic function of what was sent. */
const reportTwiceTheBytesOver4 = (request: ModelRequest) =>
  Math.ceil((2 * Buffer.byteLength(JSON.stringify(request.messages) + JSON.stringify(request.tools))) / 4);

function started(records: readonly AnyRecord[]) {
  return records.flatMap((r) => (r.type === "model.started" ? [r.data] : []));
}

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "big.txt": BIG });
});
afterEach(async () => {
  await ws.cleanup();
});

describe("context window", () => {
  it("journals each request's estimate, window and reserve in model.started", async () => {
    const summary = await run(ws, { provider: reader(2), limits: { contextWindowTokens: 100_000 } });
    expect(summary.status).toBe("unverified");
    const requests = started(await ws.journal());
    expect(requests).toHaveLength(3);
    for (const request of requests) {
      expect(request.context_window).toBe(100_000);
      expect(request.reply_reserve).toBe(8_192);
      // Nothing reported: no calibration, the estimate is the basis.
      expect(request.estimated_input_tokens).toBe(request.basis_tokens);
    }
    // Each read adds about BIG's bytes / 4 tokens to the next request.
    const growth = requests[1]!.estimated_input_tokens! - requests[0]!.estimated_input_tokens!;
    expect(growth).toBeGreaterThan(Buffer.byteLength(BIG) / 4);
    expect(summary.tokens).toEqual({
      context_window: 100_000,
      peak_estimated_input_tokens: requests[2]!.estimated_input_tokens,
      peak_reported_input_tokens: null,
    });
  });

  it("stops before sending a request over the window minus the reserve: the model never receives it", async () => {
    const probe = await run(ws, {
      provider: reader(3),
      session: "probe",
      limits: { contextWindowTokens: 100_000 },
    });
    expect(probe.status).toBe("unverified");
    const sizes = started(await ws.journal("probe")).map((r) => r.estimated_input_tokens!);
    // The second request fits exactly; the third would not.
    const reserve = 100;
    const window = sizes[1]! + reserve;
    const model = new Recording(reader(3));
    const summary = await run(ws, {
      provider: model,
      limits: { contextWindowTokens: window, replyReserveTokens: reserve },
    });
    // Over 80% of the limit, the step first asks for a summary; this one is as long as what it
    // replaces, so the request stays over and is not sent.
    const ordinary = model.requests.filter((r) => r.purpose === undefined);
    expect(ordinary).toHaveLength(2);
    expect(model.requests.map((r) => r.purpose)).toEqual([undefined, undefined, "compaction"]);
    expect(summary).toMatchObject({ status: "stopped", reason: "context_exhausted", model_requests: 3 });
    expect(summary.message).toMatch(
      new RegExp(
        `about \\d+ tokens, over the ${window}-token context window minus ${reserve} reserved for the reply even after pruning and compaction; it was not sent`,
      ),
    );
    const records = await ws.journal();
    const ordinaryStarted = started(records).filter((r) => r.purpose === undefined);
    expect(ordinaryStarted.map((r) => r.estimated_input_tokens)).toEqual(sizes.slice(0, 2));
    expect(records.filter((r) => r.type === "context.compacted")).toHaveLength(1);
    expect(records.at(-1)).toMatchObject({ type: "run.stopped", data: { reason: "context_exhausted" } });
    // The two reads ran; the over-window request was neither sent nor journaled as started.
    expect(records.filter((r) => r.type === "tool.result")).toHaveLength(2);
  });

  it("stops before the first request when even it does not fit", async () => {
    const model = new Recording(reader(1));
    const summary = await run(ws, { provider: model, limits: { contextWindowTokens: 300 } });
    expect(model.requests).toHaveLength(0);
    expect(summary).toMatchObject({ status: "stopped", reason: "context_exhausted", model_requests: 0 });
    expect(summary.tokens.peak_estimated_input_tokens).toBeNull();
  });

  it("refuses a reply reserve that leaves no room for a request", () => {
    expect(() =>
      run(ws, { provider: reader(1), limits: { contextWindowTokens: 1000, replyReserveTokens: 1000 } }),
    ).toThrow("the reply reserve (1000) must be smaller than the context window (1000 tokens)");
  });

  it("calibrates the estimate by the input tokens the provider reported for earlier requests", async () => {
    await run(ws, {
      provider: reader(3, reportTwiceTheBytesOver4),
      limits: { contextWindowTokens: 100_000 },
    });
    const records = await ws.journal();
    const requests = started(records);
    const reported = records.flatMap((r) => (r.type === "model.reply" ? [r.data.usage!.input_tokens!] : []));
    expect(requests).toHaveLength(4);
    // The first request has nothing to calibrate by.
    expect(requests[0]!.estimated_input_tokens).toBe(requests[0]!.basis_tokens);
    let basisSum = 0;
    let reportedSum = 0;
    for (const [k, request] of requests.entries()) {
      if (k > 0) {
        const ratio = reportedSum / basisSum;
        expect(ratio).toBeGreaterThan(1.5);
        expect(request.estimated_input_tokens).toBe(Math.ceil(request.basis_tokens! * ratio));
        // Closer to what the provider then reported than the uncalibrated basis was.
        expect(Math.abs(request.estimated_input_tokens! - reported[k]!)).toBeLessThan(
          Math.abs(request.basis_tokens! - reported[k]!),
        );
      }
      basisSum += request.basis_tokens!;
      reportedSum += reported[k]!;
    }
  });

  it("a scripted reply's usage is reported like a provider's, and calibrates the next estimate", async () => {
    const turns = [
      {
        calls: [{ id: "r", name: "read_file", arguments: { path: "big.txt" } }],
        usage: { input_tokens: 9_999 },
      },
      { text: "done" },
    ];
    await run(ws, { turns, limits: { contextWindowTokens: 100_000 } });
    const records = await ws.journal();
    const [first, second] = started(records);
    expect(records.find((r) => r.type === "model.reply")?.data).toMatchObject({
      usage: { input_tokens: 9_999, output_tokens: 0 },
    });
    expect(second!.estimated_input_tokens).toBe(
      Math.ceil(second!.basis_tokens! * Math.min(4, 9_999 / first!.basis_tokens!)),
    );
    expect(second!.estimated_input_tokens).toBeGreaterThan(second!.basis_tokens!);
  });

  it("a session resumed after a crash computes the same estimates as an uninterrupted one", async () => {
    const limits = { contextWindowTokens: 100_000 };
    await run(ws, { provider: reader(4, reportTwiceTheBytesOver4), session: "whole", limits });
    const whole = started(await ws.journal("whole"));

    // The process dies right after the second call's result is durable: it is written with the
    // third request's model.started, so that request was never sent.
    let results = 0;
    const crash = {
      record(record: AnyRecord) {
        if (record.type === "tool.result" && ++results === 2) throw new Error("simulated crash");
      },
    };
    await expect(
      run(ws, {
        provider: reader(4, reportTwiceTheBytesOver4),
        session: "crashed",
        limits,
        extra: { listener: crash },
      }),
    ).rejects.toThrow("simulated crash");
    expect(started(await ws.journal("crashed"))).toHaveLength(3);
    const resumed = await run(ws, {
      provider: reader(4, reportTwiceTheBytesOver4),
      session: "crashed",
      mode: "resume",
      limits,
    });
    expect(resumed.status).toBe("unverified");
    // The request the crash kept from being sent is started again, with the same estimate.
    const afterResume = started(await ws.journal("crashed"));
    expect(afterResume[3]).toEqual(afterResume[2]);
    expect(afterResume.filter((_, i) => i !== 2)).toEqual(whole);
    expect(new Set(afterResume.map((r) => r.estimated_input_tokens)).size).toBe(5);
  });
});
