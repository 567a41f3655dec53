// Delegation through the library: a child's ask goes up to the parent's approver labelled with
// the child, and a child's own budgets (tokens, wall time) stop it as budget_exhausted.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AnyRecord } from "../../../src/journal/vocabulary.js";
import { FunctionApprover } from "../../../src/policy/approver.js";
import { ScriptedProvider } from "../../../src/providers/scripted/provider.js";
import type { ApprovalRequest } from "../../../src/runtime/ports.js";
import { createSession } from "../../../src/session/create.js";
import { openWorkspace } from "../../../src/session/workspace.js";

let dir: string;
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "harness-agents-lib-"));
  await mkdir(join(dir, "ws"));
  await writeFile(join(dir, "ws", "a.txt"), "a\n");
  await writeFile(join(dir, "user.json"), "{}");
  env = { ...process.env, HARNESS_CONFIG: join(dir, "user.json"), HARNESS_AGENTS_DIR: join(dir, "copies") };
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

type Reply = {
  text: string;
  calls?: { id: string; name: string; arguments: Record<string, unknown> }[];
  usage?: object;
};

/** A parent that delegates once with `args`, and a child `helper` playing `child` step by step. */
function delegating(args: Record<string, unknown>, child: (step: number) => Reply): ScriptedProvider {
  return ScriptedProvider.fromFunction((_messages, step, agent) => {
    if (agent === "helper") return child(step);
    if (step === 0)
      return { text: "", calls: [{ id: "a1", name: "agent", arguments: { label: "helper", ...args } }] };
    return { text: "parent done" };
  }, "delegating");
}

async function journal(id: string): Promise<AnyRecord[]> {
  const workspace = await openWorkspace(join(dir, "ws"), { notify: () => undefined });
  return [...(await workspace.store.read(id))];
}

const ofType = (records: readonly AnyRecord[], type: string) => records.filter((r) => r.type === type);

describe("approvals inside a child", () => {
  it("go to the parent's approver with the child's label and depth, and are journaled in both journals", async () => {
    const asked: ApprovalRequest[] = [];
    const approver = new FunctionApprover(async (request) => {
      asked.push(request);
      return { decision: "allow", scope: "once", by: "test", reason: "ok" };
    });
    const provider = delegating({ task: "make out.txt" }, (step) =>
      step === 0
        ? { text: "", calls: [{ id: "s1", name: "shell", arguments: { command: "echo hi > out.txt" } }] }
        : { text: "made" },
    );
    const session = await createSession(
      { write: "allow", shell: "ask" },
      { workspace: join(dir, "ws"), provider, approver, env },
    );
    const summary = await session.turn("delegate");
    expect(summary.status).toBe("unverified");
    expect(asked).toHaveLength(1);
    expect(asked[0]?.tool).toBe("shell");
    expect(asked[0]?.arguments).toEqual({ command: "echo hi > out.txt" });
    expect(asked[0]?.display?.details?.agent).toBe("helper (sub-agent, depth 1)");
    const parent = await journal(session.sessionId);
    expect(ofType(parent, "agent.approval").map((r) => r.data)).toEqual([
      { label: "helper", call_id: "s1", tool: "shell", decision: "allow", by: "test" },
    ]);
    const child = await journal(`${session.sessionId}/helper`);
    expect(ofType(child, "approval.decided").map((r) => (r.data as { decision: string }).decision)).toEqual([
      "allow",
    ]);
    // It ran in the child's copy: the parent's workspace has no out.txt (merge is propose by default).
    await expect(readFile(join(dir, "ws", "out.txt"))).rejects.toThrow();
  });

  it("are denied without an approver, as the parent's own would be", async () => {
    const provider = delegating({ task: "make out.txt" }, (step) =>
      step === 0
        ? { text: "", calls: [{ id: "s1", name: "shell", arguments: { command: "echo hi > out.txt" } }] }
        : { text: "could not" },
    );
    const session = await createSession(
      { write: "allow", shell: "ask" },
      { workspace: join(dir, "ws"), provider, env },
    );
    await session.turn("delegate");
    const child = await journal(`${session.sessionId}/helper`);
    const result = ofType(child, "tool.result").find((r) => (r.data as { call_id: string }).call_id === "s1");
    expect(result?.data).toMatchObject({ status: "denied" });
    expect(
      ofType(child, "tool.started").filter((r) => (r.data as { call_id: string }).call_id === "s1"),
    ).toEqual([]);
  });
});

describe("a child's own budgets", () => {
  it("a token budget stops the child as budget_exhausted once its replies report that many tokens", async () => {
    const provider = delegating({ task: "talk", budget: { tokens: 1000 } }, (step) => ({
      text: "",
      calls: [{ id: `r${step}`, name: "read_file", arguments: { path: "a.txt" } }],
      usage: { input_tokens: 600, output_tokens: 10 },
    }));
    const session = await createSession({ write: "allow" }, { workspace: join(dir, "ws"), provider, env });
    await session.turn("delegate");
    const parent = await journal(session.sessionId);
    const [finished] = ofType(parent, "agent.finished").map(
      (r) => r.data as { outcome: string; usage: { model_requests: number } },
    );
    expect(finished?.outcome).toBe("budget_exhausted");
    expect(finished?.usage.model_requests).toBe(2);
  });

  it("a wall-time budget cancels a child that runs too long, its process killed", async () => {
    const provider = delegating({ task: "wait", budget: { wall_ms: 500 } }, (step) =>
      step === 0
        ? { text: "", calls: [{ id: "s1", name: "shell", arguments: { command: "sleep 30" } }] }
        : { text: "done" },
    );
    const session = await createSession(
      { write: "allow", shell: "allow" },
      { workspace: join(dir, "ws"), provider, env },
    );
    const started = Date.now();
    await session.turn("delegate");
    expect(Date.now() - started).toBeLessThan(20_000);
    const parent = await journal(session.sessionId);
    const [finished] = ofType(parent, "agent.finished").map(
      (r) => r.data as { outcome: string; survivors: number },
    );
    expect(finished).toMatchObject({ outcome: "budget_exhausted", survivors: 0 });
  });
});
