import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockRequest, pairingProblem, startMockServer } from "../e2e-providers/mock-server.js";
import type { MockReply } from "../e2e-providers/wire.js";
import {
  AGENTS_MD,
  COMPACTION_MARKER,
  DONE_TEXT,
  GOAL,
  longEnv,
  longRunArgs,
  longWorkspace,
  moveAt,
  RESERVE,
  SESSION,
  STEPS,
  stepAfter,
  summaryAt,
  WINDOW,
} from "../support/long-session.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
} from "./helpers.js";

/**
 * The long session through `--provider openai-compatible` against a loopback Chat Completions
 * server that answers as the scripted model does (from the conversation it is sent) and reports
 * each request's size as its input tokens, like a real provider: every body stays within the
 * window, opens with the pinned system message and goal, and summary requests carry no tools.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** What the server reports as a request's input tokens: its body's bytes / 4. */
const bodyTokens = (request: MockRequest) => Math.ceil(Buffer.byteLength(request.raw) / 4);

const isSummaryRequest = (request: MockRequest) => {
  const last = request.turns.at(-1);
  return last?.role === "user" && last.text.startsWith(COMPACTION_MARKER);
};

/** The long task's model, answering from the conversation alone. */
function answer(request: MockRequest): MockReply {
  const lastCall = request.turns.findLast((t) => t.role === "assistant")?.calls.at(-1)?.id;
  if (lastCall === undefined && request.turns.some((t) => t.role === "tool"))
    throw new Error("tool results without the call that made them");
  const step = stepAfter(lastCall);
  const usage = { input: bodyTokens(request), output: 20 };
  if (isSummaryRequest(request)) return { kind: "text", text: summaryAt(step), usage };
  const move = moveAt(step);
  if (move.kind === "read")
    return { kind: "calls", calls: [{ id: move.id, name: "read_file", args: { path: move.path } }], usage };
  if (move.kind === "write")
    return {
      kind: "calls",
      calls: [{ id: move.id, name: "write_file", args: { path: "done.txt", content: move.content } }],
      usage,
    };
  return { kind: "text", text: "finished", usage };
}

describe("a long session over openai-compatible", () => {
  it("keeps every request body within the window, pins the system message and goal, and sends summary requests without tools", async () => {
    const server = await startMockServer({ dialect: "chat", script: answer });
    try {
      const workspace = await longWorkspace();
      const model = [
        "--provider",
        "openai-compatible",
        "--model",
        "mock-chat-model",
        "--base-url",
        server.baseUrl,
      ];
      const result = await finished(startHarness(longRunArgs(workspace, model), { env: await longEnv() }));
      expectExit(result, 0);
      expect(server.failures).toEqual([]);
      expect(jsonSummary(result)).toMatchObject({ status: "verified", tool_calls: STEPS + 1 });
      expect(readFileSync(join(workspace, "done.txt"), "utf8")).toBe(`${DONE_TEXT}\n`);

      const records = await readJournal(workspace, SESSION);
      const compacted = ofType(records, "context.compacted");
      expect(ofType(records, "context.pruned").length).toBeGreaterThan(20);
      expect(compacted.length).toBeGreaterThan(20);
      expect(server.requests).toHaveLength(ofType(records, "model.started").length);

      const requests = server.requests;
      const system = requests[0]?.turns[0];
      expect(system?.role).toBe("system");
      expect(system?.role === "system" && system.text.includes(AGENTS_MD.trim())).toBe(true);
      const firstBody = requests[0]?.body as { messages: unknown[] };
      const summaries = requests.filter(isSummaryRequest);
      expect(summaries).toHaveLength(compacted.length);
      for (const request of requests) {
        // Within the window minus the reserve, as the provider counts it (the calibrated
        // estimate follows the reported input tokens).
        expect(bodyTokens(request), `request ${request.index}`).toBeLessThanOrEqual(WINDOW - RESERVE);
        const body = request.body as { messages: unknown[]; tools?: unknown[]; tool_choice?: unknown };
        // The pinned set, byte for byte as serialized on the wire.
        expect(JSON.stringify(body.messages[0])).toBe(JSON.stringify(firstBody.messages[0]));
        expect(body.messages[1]).toEqual({ role: "user", content: GOAL });
        expect(pairingProblem(request)).toBeUndefined();
        if (isSummaryRequest(request)) {
          expect(body.tools ?? []).toEqual([]);
          expect(body.tool_choice).toBeUndefined();
        } else {
          expect(request.tools.map((t) => t.name).sort()).toEqual(["read_file", "write_file"]);
        }
      }
      const last = requests.at(-1);
      expect(last !== undefined && isSummaryRequest(last)).toBe(false);
      expect(last?.turns[2]).toEqual({
        role: "user",
        text: `[Summary of the earlier conversation]\n${compacted.at(-1)?.data.summary}`,
      });
      // The provider's reports were journaled and calibrate the estimates.
      const reported = ofType(records, "model.reply").map(
        (r) => (r.data.usage as { input_tokens: number }).input_tokens,
      );
      expect(reported).toEqual(requests.filter((r) => !isSummaryRequest(r)).map(bodyTokens));
    } finally {
      await server.close();
    }
  }, 120_000);
});
