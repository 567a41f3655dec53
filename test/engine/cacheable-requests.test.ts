import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelRequest } from "../../src/providers/provider.js";
import { Recording, run, scripted, tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "a.txt": "alpha\n".repeat(50), "b.txt": "beta\n" });
});
afterEach(async () => ws.cleanup());

/** Reads, a refused call and a missing file on the way, then an answer at `steps`. */
function reader(steps: number) {
  return scripted({
    script: (_messages, step) => {
      if (step >= steps) return { text: "done" };
      const path = ["a.txt", "b.txt", "missing.txt"][step % 3]!;
      return {
        text: `step ${step}`,
        calls: [
          { id: `r${step}`, name: "read_file", arguments: { path } },
          ...(step === 2 ? [{ id: "bad", name: "no_such_tool", arguments: {} }] : []),
        ],
      };
    },
  });
}

/** Request N's messages, serialized, are a byte prefix of request N+1's; tools and cache key equal. */
function expectPrefixChain(requests: readonly ModelRequest[]): void {
  for (const [i, request] of requests.entries()) {
    expect(request.cacheKey).toMatch(/^harness-[0-9a-f]{32}$/);
    if (i === 0) continue;
    const before = requests[i - 1]!;
    const open = JSON.stringify(before.messages).slice(0, -1);
    const next = JSON.stringify(request.messages);
    expect(next.startsWith(open), `request ${i} does not extend request ${i - 1}`).toBe(true);
    expect(next.length).toBeGreaterThan(open.length + 1);
    expect(request.tools).toEqual(before.tools);
    expect(request.cacheKey).toBe(before.cacheKey);
  }
}

describe("model requests a provider can cache", () => {
  it("each request extends the previous one byte for byte, with one cache key for the session", async () => {
    const provider = new Recording(reader(8));
    const summary = await run(ws, { provider });
    expect(summary.status).toBe("unverified");
    expect(provider.requests).toHaveLength(9);
    expectPrefixChain(provider.requests);
  });

  it("a resumed session continues the same chain and keeps its cache key", async () => {
    const first = new Recording(reader(6));
    const stopped = await run(ws, { provider: first, limits: { maxModelRequests: 3 } });
    expect(stopped.reason).toBe("budget_exhausted");
    const resumed = new Recording(reader(6));
    await run(ws, { provider: resumed, mode: "resume" });
    expect(resumed.requests.length).toBeGreaterThan(1);
    expectPrefixChain([...first.requests, ...resumed.requests]);
  });

  it("another session gets another cache key", async () => {
    const one = new Recording(reader(0));
    const two = new Recording(reader(0));
    await run(ws, { provider: one, session: "one" });
    await run(ws, { provider: two, session: "two" });
    expect(one.requests[0]!.cacheKey).not.toBe(two.requests[0]!.cacheKey);
  });
});
