// Model requests retried under the one retry policy (shared/retry-policy.ts): the waits, the
// attempt limit and the wait budget as the engine journals them, and the budget kept across a resume.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EventData } from "../../src/journal/vocabulary.js";
import type { Provider } from "../../src/providers/provider.js";
import { ProviderError } from "../../src/providers/provider.js";
import { count, run, scripted, tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "helo, harness\n" });
});
afterEach(async () => ws.cleanup());

/** A model that fails each request with the next error given, then answers as `after` does. */
function failing(
  errors: ProviderError[],
  after: Provider = scripted({ script: () => ({ text: "done" }) }),
): Provider {
  let calls = 0;
  return {
    identity: after.identity,
    async *stream(request, signal) {
      const error = errors[calls];
      calls += 1;
      if (error !== undefined) throw error;
      yield* after.stream(request, signal);
    },
  };
}

const server = () => new ProviderError("SERVER", "temporary failure");
const slept: number[] = [];
const extra = {
  random: () => 0.5,
  sleep: async (ms: number) => {
    slept.push(ms);
  },
};
beforeEach(() => {
  slept.length = 0;
});

async function retries(): Promise<EventData<"model.retryable_error">[]> {
  return (await ws.events("model.retryable_error")).map((r) => r.data as EventData<"model.retryable_error">);
}

describe("model request retries", () => {
  it("wait with full jitter in a window doubling per attempt, journaled before each wait", async () => {
    const summary = await run(ws, {
      provider: failing([server(), server(), server()]),
      limits: { modelRetryBaseMs: 1000, modelRetryMaxMs: 3000 },
      extra,
    });
    expect(summary).toMatchObject({ status: "unverified" });
    // Windows 1000, 2000, 3000 (capped): half of each at random 0.5.
    expect((await retries()).map((r) => [r.attempt, r.retry_in_ms])).toEqual([
      [0, 500],
      [1, 1000],
      [2, 1500],
    ]);
    expect(slept).toEqual([500, 1000, 1500]);
  });

  it("stop after maxModelAttempts attempts of one step", async () => {
    const summary = await run(ws, {
      provider: failing([server(), server(), server(), server()]),
      limits: { maxModelAttempts: 3 },
      extra,
    });
    expect(summary).toMatchObject({ status: "stopped", reason: "provider_error" });
    expect(summary.message).toContain("gave up after 3 attempts");
    expect(await retries()).toHaveLength(2);
    expect(count(await ws.journal(), "model.failed")).toBe(1);
  });

  it("stop at once when a Retry-After does not fit what is left of the wait budget", async () => {
    const limited = () => new ProviderError("RATE_LIMIT", "slow down", { retryAfterMs: 6000 });
    const summary = await run(ws, {
      provider: failing([limited(), limited()]),
      limits: { maxModelAttempts: 10, modelRetryMaxTotalMs: 10_000 },
      extra,
    });
    expect(summary).toMatchObject({ status: "stopped", reason: "provider_error" });
    expect((await retries()).map((r) => r.retry_in_ms)).toEqual([6000]);
    expect(slept).toEqual([6000]);
  });

  it("never retry a failure that is not retryable", async () => {
    const summary = await run(ws, { provider: failing([new ProviderError("AUTH", "no")]), extra });
    expect(summary).toMatchObject({ status: "stopped", reason: "provider_error" });
    expect(await retries()).toEqual([]);
  });

  it("go on with the attempts a step used before a resume", async () => {
    const first = await run(ws, {
      provider: failing([server(), server(), new ProviderError("AUTH", "no")]),
      limits: { maxModelAttempts: 4 },
      extra,
    });
    expect(first).toMatchObject({ status: "stopped", reason: "provider_error" });
    expect(await retries()).toHaveLength(2);
    // Two retried failures count against the step after the resume: one retry is left of four attempts.
    const second = await run(ws, {
      provider: failing([server(), server()]),
      limits: { maxModelAttempts: 4 },
      extra,
    });
    expect(second).toMatchObject({ status: "stopped", reason: "provider_error" });
    expect(second.message).toContain("gave up after 4 attempts");
    expect((await retries()).map((r) => r.attempt)).toEqual([0, 1, 2]);
  });
});
