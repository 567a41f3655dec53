import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  fixture,
  harness,
  journalFile,
  jsonSummary,
  ofType,
  perCall,
  readJournal,
  removeTempDirs,
  workspaceWith,
} from "./helpers.js";

const NOTES = "status: draft\n";
const FINAL = "status: final\n";
const ACCEPT_FINAL = "printf 'status: final\\n' | cmp -s - notes.txt";
const READ_EDIT = fixture("read-edit.mjs");
const GOAL = "finalise the notes";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/**
 * One workspace for the whole story: a session stopped by its tool budget, refused resumes that
 * change the task, a resume that finishes it, then sessions and inspect over the result.
 */
describe("harness resume, sessions and inspect", () => {
  let workspace: string;

  beforeAll(async () => {
    workspace = await workspaceWith({ "notes.txt": NOTES });
  });

  const journalBytes = () => readFile(journalFile(workspace, "budget"));
  const notes = () => readFile(join(workspace, "notes.txt"), "utf8");

  it("a run stopped by its tool-call budget records the next call without starting it", async () => {
    const result = await harness([
      "run",
      ...["--script", READ_EDIT, "--workspace", workspace, "--write", "allow", "--accept", ACCEPT_FINAL],
      ...["--max-tool-calls", "1", "--session", "budget", "--json", GOAL],
    ]);
    expectExit(result, 2);
    expect(jsonSummary(result)).toMatchObject({
      status: "stopped",
      reason: "budget_exhausted",
      tool_calls: 1,
    });
    const records = await readJournal(workspace, "budget");
    expect(ofType(records, "tool.started").map((r) => r.data.call_id)).toEqual(["read-1"]);
    expect(
      ofType(records, "model.reply").flatMap((r) => (r.data.calls as { id: string }[]).map((c) => c.id)),
    ).toEqual(["read-1", "edit-1"]);
    expect(await notes()).toBe(NOTES);
  });

  it("run --session with a new prompt (the next turn) keeps resume's identity checks: a changed policy is refused", async () => {
    const before = await journalBytes();
    const result = await harness([
      "run",
      ...[
        "--script",
        READ_EDIT,
        "--workspace",
        workspace,
        "--write",
        "deny",
        "--session",
        "budget",
        "rewrite everything instead",
      ],
    ]);
    expectExit(result, 64);
    expect(result.stderr).toContain("policy");
    expect(result.stderr).toContain("new session");
    expect(await journalBytes()).toEqual(before);
  });

  it("resume with a different --write policy is refused and changes nothing", async () => {
    const before = await journalBytes();
    const result = await harness([
      "resume",
      "budget",
      "--script",
      READ_EDIT,
      "--workspace",
      workspace,
      "--write",
      "deny",
    ]);
    expectExit(result, 64);
    expect(result.stderr).toContain("policy");
    expect(await journalBytes()).toEqual(before);
  });

  it("resume without the session's scripted model asks for it and changes nothing", async () => {
    const before = await journalBytes();
    const result = await harness(["resume", "budget", "--workspace", workspace]);
    expectExit(result, 64);
    expect(result.stderr).toContain("--script");
    expect(result.stderr).toContain("read-edit.mjs");
    expect(await journalBytes()).toEqual(before);
  });

  it("resume of an unknown session exits 64 and creates nothing", async () => {
    const result = await harness(["resume", "nope", "--script", READ_EDIT, "--workspace", workspace]);
    expectExit(result, 64);
    expect(result.stderr).toContain('no session "nope"');
    const sessions = await harness(["sessions", "--workspace", workspace, "--json"]);
    expect((JSON.parse(sessions.stdout) as { session: string }[]).map((s) => s.session)).toEqual(["budget"]);
  });

  it("resume with a larger budget finishes verified without re-running or re-requesting anything", async () => {
    const before = await readJournal(workspace, "budget");
    const result = await harness([
      "resume",
      "budget",
      ...["--script", READ_EDIT, "--workspace", workspace, "--max-tool-calls", "10", "--json"],
    ]);
    expectExit(result, 0);
    expect(jsonSummary(result)).toMatchObject({ status: "verified", tool_calls: 2 });
    expect(await notes()).toBe(FINAL);
    const after = await readJournal(workspace, "budget");
    expect(after.slice(0, before.length)).toEqual(before);
    const added = after.slice(before.length);
    expect(added[0]!.type).toBe("session.resumed");
    // The recorded-but-unstarted edit runs straight away: no new model request for it.
    expect(ofType(added, "tool.started").map((r) => r.data.call_id)).toEqual(["edit-1"]);
    expect(ofType(added, "model.started")).toHaveLength(1);
    for (const count of perCall(after, "tool.started").values()) expect(count).toBe(1);
    expect([...perCall(after, "tool.result").entries()].sort()).toEqual([
      ["edit-1", 1],
      ["read-1", 1],
    ]);
  });

  it("sessions --json lists every session with its status", async () => {
    const other = await harness([
      "run",
      ...["--script", READ_EDIT, "--workspace", workspace, "--write", "allow", "--max-model-requests", "1"],
      ...["--session", "short", "--json", GOAL],
    ]);
    expectExit(other, 2);
    const result = await harness(["sessions", "--workspace", workspace, "--json"]);
    expectExit(result, 0);
    const rows = JSON.parse(result.stdout) as Record<string, unknown>[];
    expect(rows.map((r) => [r.session, r.status])).toEqual([
      ["budget", "verified"],
      ["short", "stopped (budget_exhausted)"],
    ]);
    expect(rows[0]).toMatchObject({ goal: GOAL, tool_calls: 2, model_requests: 3 });

    const table = await harness(["sessions", "--workspace", workspace]);
    expectExit(table, 0);
    expect(table.stdout).toMatch(/^budget\s+verified\s/m);
  });

  it("inspect shows the timeline with tool names and statuses; --json adds per-tool stats", async () => {
    const text = await harness(["inspect", "budget", "--workspace", workspace]);
    expectExit(text, 0);
    expect(text.stdout).toContain("status verified");
    expect(text.stdout).toMatch(/ok read_file#read-1/);
    expect(text.stdout).toMatch(/ok edit_file#edit-1/);
    expect(text.stdout).toContain("resumed");
    expect(text.stdout).toContain("stopped: stopped (budget_exhausted)");
    expect(text.stdout).toContain("finished: verified");

    const json = await harness(["inspect", "budget", "--workspace", workspace, "--json"]);
    expectExit(json, 0);
    const body = JSON.parse(json.stdout) as {
      session: string;
      status: string;
      timeline: { seq: number; type: string }[];
      tools: { tool: string; calls: number; ok: number; errors: number; denied: number }[];
    };
    expect(body.session).toBe("budget");
    expect(body.status).toBe("verified");
    const records = await readJournal(workspace, "budget");
    expect(body.timeline.map((t) => [t.seq, t.type])).toEqual(records.map((r) => [r.seq, r.type]));
    expect(body.tools).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ tool: "read_file", calls: 1, ok: 1, errors: 0, denied: 0 }),
        expect.objectContaining({ tool: "edit_file", calls: 1, ok: 1, errors: 0, denied: 0 }),
      ]),
    );
    expect(body.tools).toHaveLength(2);
  });
});
