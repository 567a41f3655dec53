// Approvals "for this session" hold across a resume with nothing but the engine: the engine
// folds them from the journal and grants them again, whoever embeds it.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MemoryArtifactStore } from "../../src/artifacts/memory-store.js";
import { Engine } from "../../src/engine/engine.js";
import { MemoryJournalStore } from "../../src/journal/memory-store.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { FunctionApprover } from "../../src/policy/approver.js";
import { SessionGrants } from "../../src/policy/grants.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import type { ModelMessage, ToolCall } from "../../src/protocol/types.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import type { ApprovalRequest, GrantPort } from "../../src/runtime/ports.js";
import { ToolRegistry } from "../../src/runtime/registry.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { type AnyTool, defineTool } from "../../src/tools/tool.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";

/** Each turn's call, by the input that started the turn; the model ends the turn after its result. */
function scriptFor(calls: Record<string, ToolCall>) {
  return ScriptedProvider.fromFunction((messages: readonly ModelMessage[]) => {
    if (messages.at(-1)?.role === "tool") return { text: "done" };
    const input = messages.findLast((m) => m.role === "user")?.content;
    const call = typeof input === "string" ? calls[input] : undefined;
    if (call === undefined) throw new Error(`no call scripted for ${String(input)}`);
    return { calls: [call] };
  }, "grants-script");
}

/** Grants "for this session" once; asked again, it throws (which the approver turns into a denial). */
function onceForTheSession(pattern: boolean) {
  const asked: ApprovalRequest[] = [];
  const approver = new FunctionApprover((request) => {
    asked.push(request);
    if (asked.length > 1) throw new Error(`asked again, for ${request.callId}`);
    return {
      decision: "allow",
      scope: "session",
      ...(pattern && request.pattern ? { pattern: request.pattern } : {}),
    };
  }, "tester");
  return { approver, asked };
}

/** A process-running tool that runs nothing: its calls are decided as shell commands are. */
const runTool: AnyTool = defineTool({
  name: "run",
  description: "Runs a command line (in this test, nothing runs: it answers ok).",
  version: "1",
  input: z.strictObject({ command: z.string() }),
  effect: "process_execution",
  idempotency: "non_idempotent",
  timeoutMs: 1000,
  resources: () => ({ exclusive: true }),
  concurrencySafe: () => false,
  execute: async (args: { command: string }) => ({ summary: `ran ${args.command}`, content: "ok" }),
});

interface Session {
  store: MemoryJournalStore;
  fs: MemoryWorkspaceFs;
  artifacts: MemoryArtifactStore;
}

function engine(
  session: Session,
  turn: { approver: FunctionApprover; calls: Record<string, ToolCall>; input?: string; grants?: GrantPort },
): Engine {
  const policy = modePolicy({ write: "ask", shell: "ask" });
  const registry = new ToolRegistry();
  for (const tool of [...createFileTools(), runTool]) registry.register(tool);
  return new Engine({
    sessionId: "s",
    store: session.store,
    provider: scriptFor(turn.calls),
    runtime: {
      snapshot: registry.snapshot(),
      fs: session.fs,
      artifacts: session.artifacts,
      approver: turn.approver,
      ...(turn.grants ? { grants: turn.grants } : {}),
    },
    workspace: { name: "ws", fingerprint: "f".repeat(64) },
    goal: "first",
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: [],
    mode: turn.input === undefined ? "new" : "resume",
    harnessVersion: "test",
    ...(turn.input !== undefined ? { input: turn.input } : {}),
  });
}

const ofType = (records: readonly AnyRecord[], type: string) => records.filter((r) => r.type === type);
const callIdsOf = (records: readonly AnyRecord[], type: string) =>
  ofType(records, type).map((r) => (r.data as { call_id: string }).call_id);

function newSession(): Session {
  return {
    store: new MemoryJournalStore(),
    fs: new MemoryWorkspaceFs(),
    artifacts: new MemoryArtifactStore(),
  };
}

describe("session approvals on resume, engine alone", () => {
  it("a new Engine on the same journal allows the same subject again without asking", async () => {
    const session = newSession();
    const { approver, asked } = onceForTheSession(false);
    const write = (id: string, content: string): ToolCall => ({
      id,
      name: "write_file",
      arguments: { path: "x.txt", content },
    });

    const first = await engine(session, { approver, calls: { first: write("w1", "one\n") } }).run();
    expect(first.status).toBe("unverified");
    expect(asked.map((r) => r.callId)).toEqual(["w1"]);

    // A second engine, as a new process would build it: no grants given, only the journal.
    const second = await engine(session, {
      approver,
      calls: { again: write("w2", "two\n") },
      input: "again",
    }).run();
    expect(second.status).toBe("unverified");
    expect(asked.map((r) => r.callId)).toEqual(["w1"]);

    const records = await session.store.read("s");
    expect(callIdsOf(records, "approval.requested")).toEqual(["w1"]);
    expect(ofType(records, "approval.decided").map((r) => r.data)).toEqual([
      expect.objectContaining({ call_id: "w1", decision: "allow", scope: "session", by: "tester" }),
    ]);
    const started = ofType(records, "tool.started").map(
      (r) => r.data as { call_id: string; permission?: unknown },
    );
    expect(started.find((s) => s.call_id === "w2")?.permission).toMatchObject({
      decision: "allow",
      reason: "approved earlier for this session",
    });
    expect(ofType(records, "tool.result").map((r) => r.data)).toEqual([
      expect.objectContaining({ call_id: "w1", status: "ok" }),
      expect.objectContaining({ call_id: "w2", status: "ok" }),
    ]);
    expect(new TextDecoder().decode(await session.fs.readFile("x.txt"))).toBe("two\n");
  });

  it("a command prefix approved for the session covers a later command under it, and nothing else", async () => {
    const session = newSession();
    const { approver, asked } = onceForTheSession(true);
    const run = (id: string, command: string): ToolCall => ({ id, name: "run", arguments: { command } });

    await engine(session, { approver, calls: { first: run("r1", "npm test --watch") } }).run();
    expect(asked.map((r) => [r.callId, r.pattern])).toEqual([["r1", "npm test*"]]);

    // The grants the engine is given receive the restored pattern grant.
    const grants = new SessionGrants();
    await engine(session, {
      approver,
      calls: { again: run("r2", "npm test -- --update") },
      input: "again",
      grants,
    }).run();
    expect(grants.list()).toEqual([
      { tool: "run", subject: { kind: "command", value: "npm test --watch" }, pattern: "npm test*" },
    ]);
    // Another program is a new question: asked (and refused, the approver throws).
    await engine(session, { approver, calls: { other: run("r3", "npm run build") }, input: "other" }).run();

    expect(asked.map((r) => r.callId)).toEqual(["r1", "r3"]);
    const records = await session.store.read("s");
    expect(callIdsOf(records, "approval.requested")).toEqual(["r1", "r3"]);
    expect(ofType(records, "tool.result").map((r) => r.data)).toEqual([
      expect.objectContaining({ call_id: "r1", status: "ok" }),
      expect.objectContaining({ call_id: "r2", status: "ok" }),
      expect.objectContaining({ call_id: "r3", error_type: "USER_DENIED" }),
    ]);
  });
});
