import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileEqualsCheck } from "../../src/engine/acceptance.js";
import { COMPACTION_MARKER } from "../../src/engine/compaction.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import type { ModelRequest, Provider } from "../../src/providers/provider.js";
import { reader } from "../support/reader.js";
import { Recording, run, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * Compaction: when pruning is not enough, one request without tools asks for a summary that
 * replaces the older turns; the pinned set (system message, goal, nested instructions) is sent
 * verbatim before it, and a crash anywhere resumes into the same next request.
 */

const FILES: Record<string, string> = {
  "AGENTS.md": "Root rule: keep answers short.\n",
  "sub/AGENTS.md": "Nested rule: files under sub/ are read-only data.\n",
};
for (let i = 0; i < 20; i += 1) FILES[`sub/f${i}.txt`] = `${`file ${i}: `.repeat(240)}\n`;
const WINDOW = 10_000;
const RESERVE = 1_000;
const LIMITS = { contextWindowTokens: WINDOW, replyReserveTokens: RESERVE };
const GOAL = "read every file under sub/ in turn";

const options = (provider: Provider, session = "s") => ({
  provider,
  session,
  goal: GOAL,
  limits: { ...LIMITS, maxModelRequests: 1_000, maxToolCalls: 1_000 },
  extra: { instructions: { workspace: true } },
});

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace(FILES);
});
afterEach(async () => {
  await ws.cleanup();
});

describe("compaction", () => {
  it("a session of 200 steps ends verified within the window, with pruning, compactions and the pinned set intact", async () => {
    const model = new Recording(reader(200));
    const summary = await run(ws, {
      ...options(model),
      acceptance: [new FileEqualsCheck(ws.fs, "sub/f0.txt", FILES["sub/f0.txt"]!)],
    });
    expect(summary).toMatchObject({ status: "verified" });
    const records = await ws.journal();
    const compactions = records.flatMap((r) => (r.type === "context.compacted" ? [r.data] : []));
    expect(compactions.length).toBeGreaterThanOrEqual(5);
    expect(records.some((r) => r.type === "context.pruned")).toBe(true);
    for (const c of compactions) expect(c.tokens_after).toBeLessThan(c.tokens_before);
    for (const r of records) {
      if (r.type === "model.started")
        expect(r.data.estimated_input_tokens!).toBeLessThanOrEqual(WINDOW - RESERVE);
    }

    const asks = model.requests.filter((r) => r.purpose === "compaction");
    const ordinary = model.requests.filter((r) => r.purpose === undefined);
    expect(asks).toHaveLength(compactions.length);
    expect(ordinary).toHaveLength(201);
    for (const ask of asks) {
      expect(ask.tools).toEqual([]);
      const last = ask.messages.at(-1)!;
      expect(last.role).toBe("user");
      expect(String(last.content).startsWith(COMPACTION_MARKER)).toBe(true);
    }
    // A call and its result are never separated: every result follows the reply that called it.
    for (const request of ordinary) {
      const called = new Set<string>();
      for (const m of request.messages) {
        if (m.role === "assistant") for (const c of m.calls) called.add(c.id);
        if (m.role === "tool") expect(called.has(m.call_id)).toBe(true);
      }
    }
    // The pinned set, byte for byte, in the last request: the system message (rules, environment,
    // root instructions), the goal, the nested instructions as first sent; then the latest summary.
    const first = ordinary[0]!;
    const last = ordinary.at(-1)!;
    expect(last.messages[0]).toEqual(first.messages[0]);
    expect(String(first.messages[0]!.content)).toContain("Root rule: keep answers short.");
    expect(last.messages[1]).toEqual({ role: "user", content: GOAL });
    const nestedFirstSent = ordinary[1]!.messages.find(
      (m) => m.role === "user" && String(m.content).includes("Nested rule"),
    );
    expect(nestedFirstSent).toBeDefined();
    expect(last.messages[2]).toEqual(nestedFirstSent);
    expect(last.messages[3]).toEqual({
      role: "user",
      content: `[Summary of the earlier conversation]\n${compactions.at(-1)!.summary}`,
    });
  }, 120_000);

  it("a scripted reply list answers compaction requests with a default summary, without using up a reply", async () => {
    const turns = [
      ...Array.from({ length: 45 }, (_, i) => ({
        text: "",
        calls: [{ id: `read-${i}`, name: "read_file", arguments: { path: `sub/f${i % 20}.txt` } }],
      })),
      { text: "all read" },
    ];
    const { provider: _unused, ...rest } = options(reader(0));
    const summary = await run(ws, { ...rest, turns });
    expect(summary).toMatchObject({ status: "unverified" });
    const records = await ws.journal();
    const compactions = records.flatMap((r) => (r.type === "context.compacted" ? [r.data] : []));
    expect(compactions.length).toBeGreaterThan(0);
    for (const c of compactions)
      expect(c.summary).toMatch(/^Scripted summary at step \d+: \d+ messages, \d+ tool results\.$/);
    // Every scripted reply was used, in order: 45 reads and the final answer.
    const replies = records.flatMap((r) => (r.type === "model.reply" ? [r.data] : []));
    expect(replies).toHaveLength(46);
    expect(replies.at(-1)!.text).toBe("all read");
    expect(summary.model_requests).toBe(46 + compactions.length);
  });

  it("a summary request that would not fit is never sent: the run stops with context_exhausted and says why", async () => {
    await ws.cleanup();
    ws = await tempWorkspace({
      "a.txt": "small a\n",
      "b.txt": "small b\n",
      "huge.txt": "a line of the huge file\n".repeat(2_000),
    });
    const paths = ["a.txt", "b.txt", "huge.txt"];
    const model = new Recording({
      identity: { kind: "test", model: "reader" },
      async *stream(request: ModelRequest) {
        const path = paths[request.step];
        if (path !== undefined) {
          yield {
            type: "tool_call_delta",
            call_id: `r${request.step}`,
            name: "read_file",
            arguments: JSON.stringify({ path }),
          };
        } else {
          yield { type: "text_delta", text: request.purpose ?? "done" };
        }
        yield { type: "end", reason: path !== undefined ? "tool_calls" : "stop" };
      },
    });
    const summary = await run(ws, {
      provider: model,
      limits: { contextWindowTokens: 6_000, replyReserveTokens: 500, previewLimitBytes: 1_000_000 },
    });
    expect(model.requests.map((r) => r.purpose)).toEqual([undefined, undefined, undefined]);
    expect(summary).toMatchObject({ status: "stopped", reason: "context_exhausted" });
    expect(summary.message).toMatch(
      /reserved for the reply \(pruning was not enough and it could not be compacted: the request asking for a summary would itself be about \d+ tokens\); it was not sent/,
    );
    const records = await ws.journal();
    expect(records.filter((r) => r.type === "model.started")).toHaveLength(3);
    expect(records.some((r) => r.type === "context.compacted")).toBe(false);
  });

  it("a crash after any record, then a resume, sends the same next request as the uninterrupted run", async () => {
    const STEPS = 45;
    const reference = new Recording(reader(STEPS));
    await run(ws, options(reference, "ref"));
    const records = await ws.journal("ref");
    expect(records.some((r) => r.type === "context.compacted")).toBe(true);
    // Every crash point around the first compaction (its request, its record, the next request).
    const at = records.findIndex((r) => r.type === "model.started" && r.data.purpose === "compaction");
    // Records appended together are one durable write, so several k end in the same state.
    const compared = new Set<string>();
    for (let k = at - 8; k < at + 10; k += 1) {
      const session = `crash-${k}`;
      let seen = 0;
      const crashing = options(reader(STEPS), session);
      await expect(
        run(ws, {
          ...crashing,
          extra: {
            ...crashing.extra,
            listener: {
              record: () => {
                if (++seen === k) throw new Error("simulated crash");
              },
            },
          },
        }),
      ).rejects.toThrow("simulated crash");
      const kept: AnyRecord[] = await ws.journal(session);
      const model = new Recording(reader(STEPS));
      await run(ws, { ...options(model, session), mode: "resume" });
      if (kept.at(-1)!.type === "tool.started") continue;
      // Where the uninterrupted run was: the requests whose outcome it had recorded.
      const done = kept.filter((r) => r.type === "model.reply" || r.type === "context.compacted").length;
      const expected = reference.requests[done];
      if (expected === undefined) {
        expect(model.requests).toHaveLength(0);
        continue;
      }
      compared.add(expected.purpose ?? "step");
      expect({ k, purpose: model.requests[0]!.purpose, messages: model.requests[0]!.messages }).toEqual({
        k,
        purpose: expected.purpose,
        messages: expected.messages,
      });
    }
    // Resumed into the summary request itself and into ordinary requests around it.
    expect([...compared].sort()).toEqual(["compaction", "step"]);
  }, 300_000);
});
