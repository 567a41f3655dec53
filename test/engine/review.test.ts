import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import {
  count,
  Recording,
  run,
  startedWriteWithoutResult,
  tempWorkspace,
  type Workspace,
} from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "helo, harness\n" });
});
afterEach(async () => ws.cleanup());

/** A session stopped for review: its write started, the effect happened, the outcome was lost. */
async function interruptedWrite() {
  const script = await startedWriteWithoutResult(ws, "hello, harness\n", "finished");
  await writeFile(join(ws.root, "hello.txt"), "hello, harness\n");
  const provider = () => new Recording(ScriptedProvider.fromFunction(script, "test-script"));
  const first = await run(ws, { provider: provider(), limits: { maxToolCalls: 10 } });
  expect(first.status).toBe("review_required");
  return provider;
}

async function resolve(resolution: "applied" | "not_applied" | "undetermined") {
  const writer = await ws.store.openWriter("s", { create: false });
  await writer.append([
    {
      type: "review.resolved",
      data: { call_id: "w", resolution, evidence: "checked hello.txt by hand", by: "tester" },
    },
  ]);
  await writer.close();
}

describe("resolving an unknown outcome", () => {
  it("an undetermined resolution keeps the session stopped, with no model request", async () => {
    const provider = await interruptedWrite();
    await resolve("undetermined");
    const recording = provider();
    const summary = await run(ws, { provider: recording, limits: { maxToolCalls: 10 } });
    expect(summary.status).toBe("review_required");
    expect(recording.requests).toHaveLength(0);
  });

  it("a resolution as applied lets the session continue; the model is told, and nothing is re-run", async () => {
    const provider = await interruptedWrite();
    await resolve("applied");
    const recording = provider();
    const summary = await run(ws, { provider: recording, limits: { maxToolCalls: 10 } });
    expect(summary.status).toBe("unverified");
    expect(recording.requests).toHaveLength(1);
    const observation = recording.requests[0]?.messages.find((m) => m.role === "tool" && m.call_id === "w");
    expect(observation?.role === "tool" && observation.content).toContain("verified to have taken effect");
    expect(observation?.role === "tool" && observation.content).toContain("checked hello.txt by hand");
    expect(count(await ws.journal(), "tool.started")).toBe(1);
    expect(await ws.file("hello.txt")).toBe("hello, harness\n");
  });
});
