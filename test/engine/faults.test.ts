// The fault-injection table of the seed's chapter 20, one test per row: the fault, what must be
// observed, and the evidence that proves it.
import { readFile, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEMO_GOAL, demoScript } from "../../src/examples/demo/script.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import {
  count,
  helloAccepted,
  lastVersion,
  Recording,
  run,
  tempWorkspace,
  type Workspace,
} from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "helo, harness\n" });
});
afterEach(async () => ws.cleanup());

const editCall = (version: string) => ({
  id: "edit-1",
  name: "edit_file",
  arguments: { path: "hello.txt", old_text: "helo,", new_text: "hello,", expected_version: version },
});

describe("fault table (chapter 20)", () => {
  it("a truncated argument stream: no tool.started and no external change", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 60 }),
        fc.constantFrom(undefined, "length"),
        async (cut, reason) => {
          const local = await tempWorkspace({ "hello.txt": "helo, harness\n" });
          try {
            const args = JSON.stringify({ path: "hello.txt", content: "overwritten by a truncated reply" });
            const stream: unknown[] = [
              {
                type: "tool_call_delta",
                call_id: "w",
                name: "write_file",
                arguments: args.slice(0, Math.min(cut, args.length - 1)),
              },
            ];
            if (reason) stream.push({ type: "end", reason });
            const summary = await run(local, { turns: [{ stream }], write: "allow" });
            expect(summary).toMatchObject({ status: "stopped", reason: "protocol_error" });
            expect(count(await local.journal(), "tool.started")).toBe(0);
            expect(await local.file("hello.txt")).toBe("helo, harness\n");
          } finally {
            await local.cleanup();
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it("writes disabled by policy: a denied result and the original content kept", async () => {
    const summary = await run(ws, {
      script: demoScript,
      goal: DEMO_GOAL,
      write: "deny",
      acceptance: [helloAccepted(ws)],
    });
    const results = (await ws.events("tool.result")).map(
      (r) => r.data as { name: string; status: string; error_type?: string },
    );
    expect(results.find((r) => r.name === "edit_file")).toMatchObject({
      status: "denied",
      error_type: "POLICY_DENIED",
    });
    expect(await ws.file("hello.txt")).toBe("helo, harness\n");
    expect(summary.status).toBe("stopped");
    expect(count(await ws.journal(), "run.finished")).toBe(0);
  });

  it("the file changed after it was read: conflict, and the newer content is not overwritten", async () => {
    const script = async (messages: Parameters<typeof demoScript>[0], step: number) => {
      if (step === 0)
        return { calls: [{ id: "read-1", name: "read_file", arguments: { path: "hello.txt" } }] };
      if (step === 1) {
        await writeFile(join(ws.root, "hello.txt"), "helo, someone else's edit\n");
        return { calls: [editCall(lastVersion(messages)!)] };
      }
      return { text: "done" };
    };
    await run(ws, { script });
    const edit = (await ws.events("tool.result"))
      .map((r) => r.data)
      .find((d) => (d as { name: string }).name === "edit_file");
    expect(edit).toMatchObject({
      status: "conflict",
      error_type: "STALE_VERSION",
      requires_new_observation: true,
    });
    expect(await ws.file("hello.txt")).toBe("helo, someone else's edit\n");
  });

  it("a tool started but its result is missing: unknown, never re-executed", async () => {
    // Run to completion, then cut the journal right after the edit's tool.started, as if the
    // process had died after the effect and before recording its outcome.
    await run(ws, { script: demoScript, goal: DEMO_GOAL, acceptance: [helloAccepted(ws)] });
    const path = join(ws.root, ".harness/sessions/s/events.jsonl");
    const lines = (await readFile(path, "utf8")).split("\n");
    const startedAt = lines.findIndex((l) => l.includes('"tool.started"') && l.includes('"edit-1"'));
    const keep = lines.slice(0, startedAt + 1).join("\n").length + 1;
    await truncate(path, keep);
    const provider = new Recording(ScriptedProvider.fromFunction(demoScript, "test-script"));
    const summary = await run(ws, { provider, goal: DEMO_GOAL, acceptance: [helloAccepted(ws)] });
    expect(summary.status).toBe("review_required");
    expect(provider.requests).toHaveLength(0);
    expect(await ws.file("hello.txt")).toBe("hello, harness\n");
    const results = (await ws.events("tool.result")).map(
      (r) => r.data as { call_id: string; status: string },
    );
    expect(results.filter((r) => r.call_id === "edit-1")).toEqual([
      expect.objectContaining({ status: "unknown" }),
    ]);
    expect(count(await ws.journal(), "tool.started")).toBe(2);
  });

  it("the model claims completion directly: the host still checks, no run.finished", async () => {
    const summary = await run(ws, {
      turns: [{ text: "All done, the file is fixed." }],
      acceptance: [helloAccepted(ws)],
    });
    expect(summary).toMatchObject({ status: "stopped", reason: "acceptance_failed" });
    expect(count(await ws.journal(), "run.finished")).toBe(0);
    const [checked] = await ws.events("acceptance.checked");
    expect(checked?.data).toMatchObject({ accepted: false });
  });

  it("the workspace changed after completion: the re-check fails, the old success does not mask it", async () => {
    const first = await run(ws, { script: demoScript, goal: DEMO_GOAL, acceptance: [helloAccepted(ws)] });
    expect(first.status).toBe("verified");
    await writeFile(join(ws.root, "hello.txt"), "hello, harness\nand more\n");
    const provider = new Recording(ScriptedProvider.fromFunction(demoScript, "test-script"));
    const second = await run(ws, { provider, goal: DEMO_GOAL, acceptance: [helloAccepted(ws)] });
    expect(second).toMatchObject({ status: "stopped", reason: "acceptance_failed" });
    expect(provider.requests).toHaveLength(0);
    const checks = (await ws.events("acceptance.checked")).map(
      (r) => (r.data as { accepted: boolean }).accepted,
    );
    expect(checks).toEqual([true, false]);
  });
});
