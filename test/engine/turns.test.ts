import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EngineError } from "../../src/engine/errors.js";
import { forkSession } from "../../src/engine/fork.js";
import type { ModelMessage } from "../../src/protocol/types.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import { count, engineFor, Recording, run, tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "helo, harness\n", "notes.txt": "n\n" });
});
afterEach(async () => ws.cleanup());

/** What a request carried after the system message, as role + text (tool results by call id). */
function transcript(messages: readonly ModelMessage[]): string[] {
  return messages.slice(1).map((m) => {
    if (m.role === "tool") return `tool ${m.call_id}`;
    if (m.role === "assistant")
      return `assistant ${m.content}${m.calls?.length ? ` [${m.calls.map((c) => c.id).join(",")}]` : ""}`;
    return `${m.role} ${m.content}`;
  });
}

const readCall = (id: string) => ({ calls: [{ id, name: "read_file", arguments: { path: "notes.txt" } }] });

describe("sessions with many turns", () => {
  it("the next turn sends the whole first turn, then the new input, and journals user.input with its turn", async () => {
    const first = new Recording(
      ScriptedProvider.fromFunction((_m, step) => (step === 0 ? readCall("c1") : { text: "read it" }), "t"),
    );
    expect((await run(ws, { provider: first })).status).toBe("unverified");

    const second = new Recording(ScriptedProvider.fromFunction(() => ({ text: "second answer" }), "t"));
    const summary = await engineFor(ws, {
      provider: second,
      extra: { input: "now summarize notes.txt" },
    }).run();
    expect(summary.status).toBe("unverified");
    expect(summary.answer).toBe("second answer");
    expect(second.requests).toHaveLength(1);
    expect(transcript(second.requests[0]!.messages)).toEqual([
      "user fix hello.txt",
      "assistant  [c1]",
      "tool c1",
      "assistant read it",
      "user now summarize notes.txt",
    ]);
    // Turn 2's request extends turn 1's last request: the model sees one growing conversation.
    const lastOfFirst = first.requests.at(-1)!.messages;
    expect(second.requests[0]!.messages.slice(0, lastOfFirst.length)).toEqual(lastOfFirst);
    const inputs = await ws.events("user.input");
    expect(inputs.map((r) => r.data)).toEqual([
      { text: "fix hello.txt", turn: 1 },
      { text: "now summarize notes.txt", turn: 2 },
    ]);
    const types = (await ws.journal()).map((r) => r.type);
    expect(types.indexOf("session.resumed")).toBeLessThan(types.lastIndexOf("user.input"));
    expect(types.at(-1)).toBe("run.finished");
  });

  it("budgets are per turn: a turn may use the whole model-request budget again", async () => {
    const script = () => ({ text: "ok" });
    expect((await run(ws, { script, limits: { maxModelRequests: 1 } })).status).toBe("unverified");
    const next = await engineFor(ws, {
      script,
      limits: { maxModelRequests: 1 },
      extra: { input: "again" },
    }).run();
    expect(next.status).toBe("unverified");
    // The summary counts the session: both turns' requests.
    expect(next.model_requests).toBe(2);
  });

  it("a session without a goal starts from input; an empty input is refused before anything is written", async () => {
    const summary = await engineFor(ws, {
      script: () => ({ text: "hi" }),
      session: "fresh",
      extra: { goal: undefined as unknown as string, input: "hello there" },
    }).run();
    expect(summary.status).toBe("unverified");
    expect((await ws.events("session.started", "fresh"))[0]?.data).toMatchObject({ goal: "hello there" });
    const before = (await ws.journal("fresh")).length;
    const refused = await engineFor(ws, {
      script: () => ({ text: "x" }),
      session: "fresh",
      extra: { input: "  " },
    })
      .run()
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EngineError);
    expect((await ws.journal("fresh")).length).toBe(before);
  });

  it("sessions recorded before turns existed (user.input without turn) take their next turn as turn 2", async () => {
    // Write an old-style journal by hand: the first user.input has no turn number.
    await run(ws, { script: () => ({ text: "first" }) });
    const records = await ws.journal();
    const oldStyle = records.find((r) => r.type === "user.input");
    expect(oldStyle?.data).toEqual({ text: "fix hello.txt", turn: 1 });
    const legacy = await tempWorkspace({});
    try {
      const writer = await legacy.store.openWriter("s", { create: true });
      await writer.append(
        (records as { type: string; data: Record<string, unknown> }[])
          .filter((r) => r.type !== "user.input")
          .flatMap((r) =>
            r.type === "session.started"
              ? [
                  {
                    type: r.type,
                    data: { ...r.data, workspace: { name: "ws", fingerprint: fingerprintOf(legacy) } },
                  },
                  { type: "user.input", data: { text: "fix hello.txt" } },
                ]
              : [{ type: r.type, data: r.data }],
          ) as never,
      );
      await writer.close();
      const recording = new Recording(
        ScriptedProvider.fromFunction(() => ({ text: "second" }), "test-script"),
      );
      const summary = await engineFor(legacy, { provider: recording, extra: { input: "more" } }).run();
      expect(summary.status).toBe("unverified");
      expect((await legacy.events("user.input")).map((r) => r.data)).toEqual([
        { text: "fix hello.txt" },
        { text: "more", turn: 2 },
      ]);
    } finally {
      await legacy.cleanup();
    }
  });
});

describe("steering", () => {
  it("a steer typed while a call runs is journaled at once and sent after the reply's results, before the next request", async () => {
    let engine: ReturnType<typeof engineFor>;
    const recording = new Recording(
      ScriptedProvider.fromFunction(async (_m, step) => {
        if (step === 0) return readCall("c1");
        return { text: `done at step ${step}` };
      }, "test-script"),
    );
    const steered: Promise<void>[] = [];
    engine = engineFor(ws, {
      provider: recording,
      extra: {
        listener: {
          record(record) {
            // Typed while the batch runs: right after its intent is journaled, before the result.
            if (record.type === "tool.started") steered.push(engine.steer("also look at hello.txt"));
          },
        },
      },
    });
    const summary = await engine.run();
    await Promise.all(steered);
    expect(summary.status).toBe("unverified");
    expect(recording.requests).toHaveLength(2);
    expect(transcript(recording.requests[1]!.messages)).toEqual([
      "user fix hello.txt",
      "assistant  [c1]",
      "tool c1",
      "user also look at hello.txt",
    ]);
    const types: string[] = (await ws.journal()).map((r) => r.type);
    const at = (type: string) => types.indexOf(type);
    expect(at("tool.started")).toBeLessThan(at("user.steered"));
    expect(at("user.steered")).toBeLessThan(at("tool.result"));
    expect(at("tool.result")).toBeLessThan(at("steer.delivered"));
    expect(at("steer.delivered")).toBeLessThan(types.lastIndexOf("model.started"));
    expect((await ws.events("steer.delivered"))[0]?.data).toEqual({ step: 1, count: 1 });
  });

  it("a steer typed while the model writes its final answer keeps the turn going instead of ending it", async () => {
    let engine: ReturnType<typeof engineFor>;
    const recording = new Recording(
      ScriptedProvider.fromFunction(async (_m, step) => {
        if (step === 0) await engine.steer("wait, one more thing");
        return { text: `answer ${step}` };
      }, "test-script"),
    );
    engine = engineFor(ws, { provider: recording });
    const summary = await engine.run();
    expect(summary.answer).toBe("answer 1");
    expect(transcript(recording.requests[1]!.messages)).toEqual([
      "user fix hello.txt",
      "assistant answer 0",
      "user wait, one more thing",
    ]);
  });

  it("steering is refused when no turn runs; an undelivered steer from a crashed turn is delivered on resume", async () => {
    const idle = engineFor(ws, { script: () => ({ text: "x" }) });
    await expect(idle.steer("hello")).rejects.toThrow(/no turn is running/);
    // A turn that stopped (budget) with a steer journaled but not yet delivered.
    await run(ws, { script: () => readCall("c1"), limits: { maxToolCalls: 0 } });
    const writer = await ws.store.openWriter("s", { create: false });
    await writer.append([{ type: "user.steered", data: { text: "left over" } }]);
    await writer.close();
    const recording = new Recording(ScriptedProvider.fromFunction(() => ({ text: "fine" }), "test-script"));
    await engineFor(ws, { provider: recording, extra: { input: "next" } }).run();
    expect(transcript(recording.requests[0]!.messages)).toEqual([
      "user fix hello.txt",
      "assistant  [c1]",
      "tool c1",
      "user next",
      "user left over",
    ]);
    expect(count(await ws.journal(), "steer.delivered")).toBe(1);
  });
});

function fingerprintOf(w: Workspace): string {
  return createHash("sha256").update(w.root).digest("hex");
}

describe("forking", () => {
  it("refuses a cut inside a running call and leaves no session behind", async () => {
    await run(ws, { script: () => readCall("c1"), limits: { maxToolCalls: 0 } });
    const writer = await ws.store.openWriter("s", { create: false });
    await writer.append([
      {
        type: "tool.started",
        data: {
          call_id: "late",
          name: "read_file",
          arguments: { path: "notes.txt" },
          arguments_hash: "0".repeat(64),
          tool_version: "1",
          schema_digest: "0".repeat(64),
          effect: "read_only",
          batch: 5,
        },
      },
    ]);
    await writer.close();
    const records = await ws.journal();
    const refused = await forkSession(ws.store, "s", "f", records.length - 1).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EngineError);
    expect((refused as Error).message).toContain("inside a running call");
    expect(await ws.store.exists("f")).toBe(false);
    // One record earlier the history is whole: the fork resumes under its own id and verifies.
    const forked = await forkSession(ws.store, "s", "f", records.length - 2);
    expect(forked).toMatchObject({ parent: "s", at_seq: records.length - 2, at_hash: records.at(-2)!.hash });
    const summary = await engineFor(ws, {
      script: () => ({ text: "from the fork" }),
      session: "f",
      extra: { input: "go on" },
    }).run();
    expect(summary).toMatchObject({ status: "unverified", session: "f", answer: "from the fork" });
    expect((await ws.journal()).length).toBe(records.length);
  });
});
