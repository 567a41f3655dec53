import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { createShellTool } from "../../src/tools/shell/shell.js";
import { eventually, liveGroup } from "../shell/helpers.js";
import { alive } from "../support/processes.js";
import { engineFor, Recording, tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "helo, harness\n" });
});
afterEach(async () => ws.cleanup());

/** A process that exists and is not a zombie (killed, waiting for its parent to reap it). */

const shellPolicy = () => {
  const policy = modePolicy({ write: "allow", shell: "allow" });
  return { describe: policy.describe, digest: policy.digest, permissions: policy };
};

describe("interrupting a turn", () => {
  it("kills a running shell command's process tree, records its outcome, and leaves the session open", async () => {
    const pgids: number[] = [];
    const shell = createShellTool({
      sandbox: { profile: "none" },
      killGraceMs: 200,
      onSpawn: (info) => void pgids.push(info.pgid),
    });
    const command = "sleep 300 & echo $! > child.pid; wait";
    const first = new Recording(
      ScriptedProvider.fromFunction(
        (_m, step) =>
          step === 0 ? { calls: [{ id: "sh", name: "shell", arguments: { command } }] } : { text: "never" },
        "test-script",
      ),
    );
    const engine = engineFor(ws, {
      provider: first,
      tools: [...createFileTools(), shell],
      extra: { policy: shellPolicy() },
    });
    const running = engine.run();
    const pidFile = join(ws.root, "child.pid");
    const childPid = async () => Number((await readFile(pidFile, "utf8").catch(() => "")).trim());
    expect(await eventually(() => pgids.length > 0, 10_000)).toBe(true);
    for (let i = 0; i < 200 && !((await childPid()) > 0); i++) await new Promise((r) => setTimeout(r, 25));
    const pid = await childPid();
    expect(alive(pid)).toBe(true);

    engine.interrupt();
    const summary = await running;
    expect(summary.status).toBe("interrupted");
    expect(alive(pid)).toBe(false);
    expect(liveGroup(pgids[0]!)).toEqual([]);
    // Only the first request was made: nothing was sent after the interrupt.
    expect(first.requests).toHaveLength(1);
    const records = await ws.journal();
    const result = records.find((r) => r.type === "tool.result");
    expect(result?.data).toMatchObject({ call_id: "sh", status: "cancelled" });
    expect(records.at(-1)).toMatchObject({ type: "turn.interrupted", data: { turn: 1 } });
    expect(records.some((r) => r.type === "run.cancelled")).toBe(false);

    // The next turn continues the same session: the cancelled call and the new input are sent.
    const second = new Recording(
      ScriptedProvider.fromFunction(() => ({ text: "ok, stopped" }), "test-script"),
    );
    const next = await engineFor(ws, {
      provider: second,
      tools: [...createFileTools(), shell],
      extra: { policy: shellPolicy(), input: "never mind, just say ok" },
    }).run();
    expect(next.status).toBe("unverified");
    const sent = second.requests[0]!.messages;
    expect(sent.at(-2)).toMatchObject({ role: "tool", call_id: "sh", status: "cancelled" });
    expect(sent.at(-1)).toEqual({ role: "user", content: "never mind, just say ok" });
    expect((await ws.events("user.input")).map((r) => r.data)).toEqual([
      { text: "fix hello.txt", turn: 1 },
      { text: "never mind, just say ok", turn: 2 },
    ]);
  }, 30_000);

  it("an interrupt while the model streams records no reply and ends the turn as interrupted", async () => {
    let engine: ReturnType<typeof engineFor>;
    const provider = ScriptedProvider.fromFunction(async () => {
      engine.interrupt();
      return { text: "too late" };
    }, "test-script");
    engine = engineFor(ws, { provider });
    const summary = await engine.run();
    expect(summary.status).toBe("interrupted");
    const types = (await ws.journal()).map((r) => r.type);
    expect(types).not.toContain("model.reply");
    expect(types.at(-1)).toBe("turn.interrupted");
  });
});
