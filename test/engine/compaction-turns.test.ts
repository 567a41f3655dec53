import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionState } from "../../src/engine/state.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import type { ModelMessage } from "../../src/protocol/types.js";
import type { ModelRequest, Provider } from "../../src/providers/provider.js";
import { engineFor, Recording, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * Compaction in a session of many turns: what the person said in every turn (each turn's input,
 * every delivered steer) is sent verbatim after any number of compactions, never summarized away.
 */

const FILES: Record<string, string> = {};
for (let i = 0; i < 10; i += 1) FILES[`f${i}.txt`] = `${`file ${i}: `.repeat(240)}\n`;
const INPUTS = [
  "turn one: read the files",
  "turn two: never touch f3.txt, and read them again",
  "turn three: read them once more",
];

const userTexts = (messages: readonly ModelMessage[]) =>
  messages.filter((m) => m.role === "user").map((m) => String(m.content));

/** Reads `perTurn` files in each turn, then answers; compaction requests get a summary. */
function readsPerTurn(perTurn: number): Provider {
  let summaries = 0;
  let turn = "";
  let reads = 0;
  return {
    identity: { kind: "test", model: "turn-reader" },
    async *stream(request: ModelRequest) {
      if (request.purpose === "compaction") {
        summaries += 1;
        yield { type: "text_delta", text: `Summary ${summaries}: files were read.` };
        yield { type: "end", reason: "stop" };
        return;
      }
      // The turn is the latest input the model can see.
      const seen =
        userTexts(request.messages)
          .filter((text) => INPUTS.includes(text))
          .at(-1) ?? "";
      if (seen !== turn) {
        turn = seen;
        reads = 0;
      }
      if (reads < perTurn) {
        reads += 1;
        yield {
          type: "tool_call_delta",
          call_id: `read-${request.step}`,
          name: "read_file",
          arguments: JSON.stringify({ path: `f${request.step % 10}.txt` }),
        };
        yield { type: "end", reason: "tool_calls" };
      } else {
        yield { type: "text_delta", text: "done with this turn" };
        yield { type: "end", reason: "stop" };
      }
    },
  };
}

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace(FILES);
});
afterEach(async () => ws.cleanup());

describe("compaction across turns", () => {
  it("pins every turn's input: after compactions the model is still sent each one verbatim, in order", async () => {
    const limits = {
      contextWindowTokens: 6_000,
      replyReserveTokens: 500,
      maxModelRequests: 200,
      maxToolCalls: 200,
    };
    const model = new Recording(readsPerTurn(12));
    await engineFor(ws, { provider: model, goal: INPUTS[0]!, limits }).run();
    for (const input of INPUTS.slice(1)) {
      const summary = await engineFor(ws, {
        provider: model,
        goal: INPUTS[0]!,
        limits,
        extra: { input },
      }).run();
      expect([summary.status, summary.message]).toEqual(["unverified", null]);
    }
    const compactions = await ws.events("context.compacted");
    const compactedAt = compactions.map((r) => r.seq);
    const inputsAt = (await ws.events("user.input")).map((r) => r.seq);
    // Compactions happened after the last turn had started, so its input and the ones before were
    // all older than the cut at least once.
    expect(compactedAt.filter((seq) => seq > inputsAt[2]!).length).toBeGreaterThanOrEqual(1);

    const ordinary = model.requests.filter((r) => r.purpose === undefined);
    const last = ordinary.at(-1)!;
    const summaryAt = last.messages.findIndex(
      (m) => m.role === "user" && String(m.content).startsWith("[Summary of the earlier conversation]"),
    );
    expect(summaryAt).toBeGreaterThan(0);
    // Every input, byte for byte and in order, before the summary; none of them twice.
    expect(userTexts(last.messages.slice(0, summaryAt))).toEqual(INPUTS);
    expect(userTexts(last.messages).filter((text) => INPUTS.includes(text))).toEqual(INPUTS);
    // And in every request after the first compaction of the last turn.
    const firstAfter = model.requests.findIndex(
      (r, i) =>
        r.purpose === "compaction" &&
        i > model.requests.findIndex((q) => userTexts(q.messages).includes(INPUTS[2]!)),
    );
    for (const request of model.requests.slice(firstAfter + 1).filter((r) => r.purpose === undefined)) {
      expect(userTexts(request.messages).filter((text) => INPUTS.includes(text))).toEqual(INPUTS);
    }
  }, 60_000);
});

describe("the fold of a compaction", () => {
  const record = (seq: number, type: string, data: object) =>
    ({ seq, type, data, time: "t", prev: "p", hash: "h" }) as unknown as AnyRecord;
  const reply = (seq: number, text: string) => record(seq, "model.reply", { step: seq, text, calls: [] });
  const compacted = (seq: number, replaced: number, summary: string) =>
    record(seq, "context.compacted", {
      step: seq,
      attempt: 0,
      summary,
      replaced_messages: replaced,
      tokens_before: 1,
      tokens_after: 1,
    });

  it("pins delivered steers with the inputs, and never doubles them over repeated compactions", () => {
    const state = SessionState.from([
      record(1, "user.input", { text: "goal", turn: 1 }),
      reply(2, "a"),
      record(3, "user.steered", { text: "steer: keep f3.txt" }),
      record(4, "steer.delivered", { step: 1, count: 1 }),
      reply(5, "b"),
      record(6, "user.input", { text: "second turn", turn: 2 }),
      reply(7, "c"),
    ]);
    // Replace everything before the last reply.
    state.apply(compacted(8, state.messages.length - 1, "S1"));
    const first = userTexts(state.messages);
    expect(first).toEqual([
      "goal",
      "steer: keep f3.txt",
      "second turn",
      "[Summary of the earlier conversation]\nS1",
    ]);
    state.apply(reply(9, "d"));
    state.apply(compacted(10, state.messages.length - 1, "S2"));
    expect(userTexts(state.messages)).toEqual([
      "goal",
      "steer: keep f3.txt",
      "second turn",
      "[Summary of the earlier conversation]\nS2",
    ]);
  });
});
