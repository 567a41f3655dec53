// Approvals: asked before the call starts, denials the model is told not to repeat, and
// session grants that hold for the same tool + subject, also across a resume.
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Engine } from "../../src/engine/engine.js";
import { FunctionApprover } from "../../src/policy/approver.js";
import { SessionGrants } from "../../src/policy/grants.js";
import type { ApprovalRequest } from "../../src/runtime/ports.js";
import { runtimeEnvironment } from "../../src/session/engine-options.js";
import { effectiveFlags, recordableFlags } from "../../src/session/run-flags.js";
import { buildSetup } from "../../src/session/setup.js";
import { openWorkspace } from "../../src/session/workspace.js";
import { Recording, run, scripted, tempWorkspace, type Workspace } from "../support/session.js";
import { ofType, resultOf, results } from "./helpers.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace();
});
afterEach(async () => ws.cleanup());

const done = { text: "done" };
const write = (id: string, content: string) => ({
  id,
  name: "write_file",
  arguments: { path: "x.txt", content },
});

/** An approver that answers from a list and remembers what it was asked. */
function answering(answers: unknown[]) {
  const asked: ApprovalRequest[] = [];
  const port = new FunctionApprover((request) => {
    asked.push(request);
    return answers.shift() ?? { decision: "deny", reason: "no more answers" };
  }, "tester");
  return { port, asked };
}

describe("approvals at engine level", () => {
  it("journals approval.requested and approval.decided before the call starts", async () => {
    const approver = answering([{ decision: "allow", scope: "once" }]);
    await run(ws, { write: "ask", approver: approver.port, turns: [{ calls: [write("w", "hi\n")] }, done] });
    expect(approver.asked).toHaveLength(1);
    expect(approver.asked[0]).toMatchObject({
      tool: "write_file",
      subject: { kind: "path", value: "x.txt" },
    });
    const records = await ws.journal();
    const order = records
      .filter((r) => r.type.startsWith("approval.") || r.type.startsWith("tool."))
      .map((r) => r.type);
    expect(order).toEqual(["approval.requested", "approval.decided", "tool.started", "tool.result"]);
    expect(ofType(records, "approval.decided")[0]?.data).toMatchObject({
      call_id: "w",
      decision: "allow",
      scope: "once",
      by: "tester",
    });
    expect(ofType(records, "tool.started")[0]?.data).toMatchObject({
      permission: { decision: "allow", reason: "approved by tester" },
    });
    expect(await ws.file("x.txt")).toBe("hi\n");
  });

  it("a denial is USER_DENIED, nothing runs, and the model is told not to repeat it", async () => {
    const approver = answering([{ decision: "deny", reason: "not today" }]);
    const provider = new Recording(scripted({ turns: [{ calls: [write("w", "hi\n")] }, done] }));
    await run(ws, { write: "ask", approver: approver.port, provider });
    const result = resultOf(await results(ws), "w");
    expect(result).toMatchObject({ status: "denied", error_type: "USER_DENIED", operation_applied: false });
    expect(result.hint).toMatch(/do not repeat/i);
    expect(await ws.events("tool.started")).toHaveLength(0);
    await expect(readFile(join(ws.root, "x.txt"))).rejects.toMatchObject({ code: "ENOENT" });
    const observation = provider.requests[1]?.messages.find((m) => m.role === "tool");
    expect(observation?.content).toContain("USER_DENIED");
    expect(observation?.content).toMatch(/do not repeat/i);
  });

  it("an interrupt while the user is being asked cancels the calls instead of recording a refusal", async () => {
    const controller = new AbortController();
    const asked: string[] = [];
    const approver = new FunctionApprover((request) => {
      asked.push(request.callId);
      controller.abort();
      return { decision: "deny", reason: "prompt interrupted" };
    });
    const provider = new Recording(
      scripted({
        turns: [
          {
            calls: [
              { id: "r", name: "read_file", arguments: { path: "missing.txt" } },
              write("w1", "one\n"),
              { id: "w2", name: "write_file", arguments: { path: "y.txt", content: "y\n" } },
            ],
          },
          done,
        ],
      }),
    );
    const summary = await run(ws, { write: "ask", approver, provider, signal: controller.signal });
    expect(summary.status).toBe("cancelled");
    expect(asked).toEqual(["w1"]);
    const all = await results(ws);
    expect(all.map((r) => r.call_id)).toEqual(["r", "w1", "w2"]);
    // The read ran in its own batch before the writes' approval was asked (approvals are asked
    // batch by batch, just before a batch starts); the interrupted prompt cancels the rest.
    expect(all[0]).toMatchObject({ status: "error", error_type: "NOT_FOUND" });
    for (const result of all.slice(1)) {
      expect(result).toMatchObject({
        status: "cancelled",
        error_type: "CANCELLED",
        operation_applied: false,
      });
    }
    expect((await ws.events("tool.started")).map((r) => (r.data as { call_id: string }).call_id)).toEqual([
      "r",
    ]);
    expect((await ws.journal()).at(-1)?.type).toBe("run.cancelled");
    await expect(readFile(join(ws.root, "x.txt"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("nobody is asked to approve a call the tool budget will not let start", async () => {
    const { port, asked } = answering([{ decision: "allow" }, { decision: "allow" }, { decision: "allow" }]);
    const summary = await run(ws, {
      write: "ask",
      approver: port,
      turns: [
        {
          calls: [
            { id: "a", name: "write_file", arguments: { path: "a.txt", content: "a\n" } },
            { id: "b", name: "write_file", arguments: { path: "b.txt", content: "b\n" } },
            { id: "c", name: "write_file", arguments: { path: "c.txt", content: "c\n" } },
          ],
        },
        done,
      ],
      limits: { maxToolCalls: 1 },
    });
    expect(summary).toMatchObject({ status: "stopped", reason: "budget_exhausted" });
    expect(asked.map((r) => r.callId)).toEqual(["a"]);
    expect(await ws.events("approval.requested")).toHaveLength(1);
    expect(await readFile(join(ws.root, "a.txt"), "utf8")).toBe("a\n");
    await expect(readFile(join(ws.root, "b.txt"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("a session grant covers later calls of the same tool and subject without asking", async () => {
    const approver = answering([{ decision: "allow", scope: "session" }]);
    await run(ws, {
      write: "ask",
      approver: approver.port,
      runtime: { grants: new SessionGrants() },
      turns: [
        { calls: [write("w1", "one\n")] },
        { calls: [write("w2", "two\n")] },
        // A different subject is a new question (and is denied here).
        { calls: [{ id: "w3", name: "write_file", arguments: { path: "y.txt", content: "y\n" } }] },
        done,
      ],
    });
    expect(approver.asked.map((r) => r.callId)).toEqual(["w1", "w3"]);
    expect(
      (await ws.events("approval.requested")).map((r) => (r.data as { call_id: string }).call_id),
    ).toEqual(["w1", "w3"]);
    const all = await results(ws);
    expect(resultOf(all, "w2").status).toBe("ok");
    expect(resultOf(all, "w3").error_type).toBe("USER_DENIED");
    expect(await ws.file("x.txt")).toBe("two\n");
  });
});

describe("session grants across a resume (CLI setup)", () => {
  it("are rebuilt from the journal by the engine, so the resumed run does not ask again", async () => {
    const scriptPath = join(ws.root, "..", `${ws.root.split("/").pop()}-script.json`);
    await writeFile(
      scriptPath,
      JSON.stringify({
        replies: [{ calls: [write("w1", "one\n")] }, { calls: [write("w2", "two\n")] }, done],
      }),
    );
    const workspace = await openWorkspace(ws.root, { notify: () => {} });
    const flags = effectiveFlags({ write: "ask" }, undefined, false);
    const engine = async (approver: FunctionApprover, maxToolCalls: number, mode: "new" | "resume") => {
      const setup = await buildSetup({ workspace, flags, script: scriptPath, interactive: false });
      return new Engine({
        sessionId: "s",
        store: workspace.store,
        provider: setup.provider,
        runtime: { ...runtimeEnvironment(workspace, "s", setup), approver },
        workspace: workspace.identity,
        goal: "write x.txt twice",
        policy: setup.policy,
        processes: setup.processes,
        setup: recordableFlags(flags),
        acceptance: [],
        limits: { maxToolCalls },
        mode,
        harnessVersion: "test",
      }).run();
    };
    try {
      const first = answering([{ decision: "allow", scope: "session" }]);
      const stopped = await engine(first.port, 1, "new");
      expect(stopped).toMatchObject({ status: "stopped", reason: "budget_exhausted" });
      expect(first.asked.map((r) => r.callId)).toEqual(["w1"]);
      expect(await ws.file("x.txt")).toBe("one\n");

      const second = answering([]);
      const resumed = await engine(second.port, 10, "resume");
      expect(resumed.status).toBe("unverified");
      expect(second.asked).toHaveLength(0);
      expect(await ws.file("x.txt")).toBe("two\n");
      expect(
        (await ws.events("approval.requested")).map((r) => (r.data as { call_id: string }).call_id),
      ).toEqual(["w1"]);
    } finally {
      await rm(scriptPath, { force: true });
    }
  });
});
