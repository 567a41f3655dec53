import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EngineError } from "../../src/engine/errors.js";
import { SessionState } from "../../src/engine/state.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import { engineFor, Recording, run, tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "hello\n" });
});
afterEach(async () => ws.cleanup());

const model = (name: string) =>
  new Recording(ScriptedProvider.fromFunction(() => ({ text: `${name} answers` }), name));

describe("switching a session's model", () => {
  it("is refused without the explicit switch: a different provider is an identity mismatch", async () => {
    await run(ws, { provider: model("small"), extra: { setup: { profile: "small" } } });
    const other = model("big");
    const refused = engineFor(ws, { provider: other, extra: { input: "next" } }).run();
    await expect(refused).rejects.toBeInstanceOf(EngineError);
    await expect(refused).rejects.toMatchObject({ code: "IDENTITY_MISMATCH" });
    expect(other.requests).toHaveLength(0);
    expect((await ws.journal()).map((r) => r.type)).not.toContain("model.switched");
  });

  it("journals model.switched before the next turn, and later turns are checked against the new model", async () => {
    const small = model("small");
    await run(ws, { provider: small, extra: { setup: { profile: "small" } } });
    const big = model("big");
    const switched = await engineFor(ws, {
      provider: big,
      extra: { input: "now with the big one", switchModel: true, setup: { profile: "big" } },
    }).run();
    expect(switched.answer).toBe("big answers");
    // The new model got the whole conversation, the first turn's answer included.
    const sent = big.requests[0]!.messages.slice(1).map((m) => `${m.role} ${String(m.content)}`);
    expect(sent).toEqual(["user fix hello.txt", "assistant small answers", "user now with the big one"]);

    const journal = await ws.journal();
    const types = journal.map((r) => r.type);
    const record = journal.find((r) => r.type === "model.switched");
    expect(record?.data).toEqual({
      from: small.identity,
      to: big.identity,
      options: { profile: "big" },
    });
    // Recorded before the turn's input and before anything was sent to the new model.
    expect(types.indexOf("model.switched")).toBeLessThan(types.lastIndexOf("user.input"));
    expect(types.indexOf("model.switched")).toBeLessThan(types.lastIndexOf("model.started"));
    const state = SessionState.from(journal);
    expect(state.provider).toEqual(big.identity);
    expect(state.options).toEqual({ profile: "big" });

    // A later resume with the new model passes without a switch; the old one is now the mismatch.
    const again = await engineFor(ws, { provider: model("big"), extra: { input: "third" } }).run();
    expect(again.answer).toBe("big answers");
    await expect(
      engineFor(ws, { provider: model("small"), extra: { input: "fourth" } }).run(),
    ).rejects.toMatchObject({ code: "IDENTITY_MISMATCH" });
    expect((await ws.journal()).filter((r) => r.type === "model.switched")).toHaveLength(1);
  });

  it("a switch to the model already in use records nothing", async () => {
    await run(ws, { provider: model("small") });
    await engineFor(ws, { provider: model("small"), extra: { input: "next", switchModel: true } }).run();
    expect((await ws.journal()).map((r) => r.type)).not.toContain("model.switched");
  });
});
