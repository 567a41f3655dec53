import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  ensureBuilt,
  fixture,
  harness,
  journalFile,
  jsonScript,
  jsonSummary,
  ndjson,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  tempDir,
  workspaceWith,
} from "./helpers.js";

const NOTES = "status: draft\n";
const FINAL = "status: final\n";
const ACCEPT_FINAL = `printf '${FINAL.replace("\n", "\\n")}' | cmp -s - notes.txt`;
const READ_EDIT = fixture("read-edit.mjs");

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

async function run(
  workspace: string,
  script: string,
  flags: string[],
  goal = "finalise the notes",
): Promise<CliResult> {
  return harness(["run", "--script", script, "--workspace", workspace, ...flags, goal]);
}

async function notes(workspace: string): Promise<string> {
  return readFile(join(workspace, "notes.txt"), "utf8");
}

describe("harness run with a scripted model", () => {
  it("read, edit bound to the version, finish: verified, and --json prints exactly one summary", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const result = await run(workspace, READ_EDIT, ["--write", "allow", "--accept", ACCEPT_FINAL, "--json"]);
    expect(result.code).toBe(0);
    const summary = jsonSummary(result);
    expect(Object.keys(summary).sort()).toEqual(
      [
        "answer",
        "duration_ms",
        "events",
        "message",
        "model_requests",
        "next",
        "reason",
        "session",
        "status",
        "tokens",
        "tool_calls",
        "usage",
        "workspace",
      ].sort(),
    );
    expect(summary).toMatchObject({
      status: "verified",
      reason: null,
      model_requests: 3,
      tool_calls: 2,
      answer: "notes.txt now says final.",
    });
    expect(await notes(workspace)).toBe(FINAL);
    const records = await readJournal(workspace, String(summary.session));
    expect(summary.events).toBe(records.length);
    const edit = ofType(records, "tool.started").find((r) => r.data.name === "edit_file")!;
    const read = ofType(records, "tool.result").find((r) => r.data.name === "read_file")!;
    expect((edit.data.arguments as Record<string, unknown>).expected_version).toBe(
      (read.data.data as Record<string, unknown>).version,
    );
    expect(ofType(records, "run.finished").at(-1)!.data.status).toBe("verified");
    // The journal names the workspace and the script, but never by their host paths.
    const journalText = await readFile(journalFile(workspace, String(summary.session)), "utf8");
    expect(journalText).not.toContain(workspace);
    expect(journalText).not.toContain(READ_EDIT);
    expect(summary.workspace).toBe(workspace);
  });

  it("an acceptance command that fails stops the run (exit 2, acceptance_failed)", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const result = await run(workspace, READ_EDIT, ["--write", "allow", "--accept", "false", "--json"]);
    expect(result.code).toBe(2);
    expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "acceptance_failed" });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(ofType(records, "acceptance.checked").at(-1)!.data.accepted).toBe(false);
    expect(ofType(records, "run.finished")).toHaveLength(0);
  });

  it("without --accept the run ends unverified (exit 0)", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const result = await run(workspace, READ_EDIT, ["--write", "allow", "--json"]);
    expect(result.code).toBe(0);
    expect(jsonSummary(result)).toMatchObject({ status: "unverified", reason: null });
    expect(await notes(workspace)).toBe(FINAL);
  });

  it("--events prints every journal record as NDJSON with contiguous seq", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const result = await run(workspace, READ_EDIT, [
      "--write",
      "allow",
      "--accept",
      ACCEPT_FINAL,
      "--events",
    ]);
    expect(result.code).toBe(0);
    const printed = ndjson(result.stdout);
    expect(printed.map((r) => r.seq)).toEqual(printed.map((_, i) => i));
    const id = String(printed[0]!.data.session_id);
    expect(printed).toEqual(await readJournal(workspace, id));
    expect(printed.at(-1)!.type).toBe("run.finished");
    // The model's text also streams as transient lines, never journal records, in reply order.
    const transient = result.stdout
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.transient === true);
    expect(transient.length).toBeGreaterThan(0);
    for (const line of transient) expect(Object.keys(line).sort()).toEqual(["text", "transient", "type"]);
    expect(transient.every((line) => line.type === "text.delta")).toBe(true);
    const replies = printed.filter((r) => r.type === "model.reply").map((r) => String(r.data.text));
    expect(transient.map((line) => line.text).join("")).toBe(replies.join(""));
    // Each delta comes before the reply it is part of is recorded.
    const lines = result.stdout.split("\n");
    const firstDelta = lines.findIndex((line) => line.includes('"text.delta"'));
    const firstReply = lines.findIndex((line) => line.includes('"type":"model.reply"'));
    expect(firstDelta).toBeLessThan(firstReply);
    // The human summary moves to stderr so stdout stays machine-readable.
    expect(result.stderr).toContain("verified");
  });

  it("--json together with --events is a usage error and starts nothing", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const result = await run(workspace, READ_EDIT, ["--write", "allow", "--json", "--events"]);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("--events");
    expect(result.stdout).toBe("");
    expect(sessionIds(workspace)).toEqual([]);
  });

  it.each([
    ["invalid JSON", "{ replies: [", "not valid JSON"],
    ["an unknown field", JSON.stringify({ replies: [{ text: "hi", colour: "red" }] }), "colour"],
    ["a wrong top level", JSON.stringify({ turns: [] }), "turns"],
  ])("a script with %s exits 64 naming the file, and no journal is created", async (_, body, detail) => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const script = join(await tempDir(), "broken-script.json");
    await writeFile(script, body);
    const result = await run(workspace, script, ["--write", "allow"]);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("broken-script.json");
    expect(result.stderr).toContain(detail);
    expect(sessionIds(workspace)).toEqual([]);
    expect(await notes(workspace)).toBe(NOTES);
  });

  it("--write deny: the edit is denied, the file is unchanged, and failed acceptance stops the run", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const result = await run(workspace, READ_EDIT, ["--write", "deny", "--accept", ACCEPT_FINAL, "--json"]);
    expect(result.code).toBe(2);
    expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "acceptance_failed" });
    expect(await notes(workspace)).toBe(NOTES);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const edit = ofType(records, "tool.result").find((r) => r.data.call_id === "edit-1")!;
    expect(edit.data.status).toBe("denied");
    expect(ofType(records, "tool.started").map((r) => r.data.call_id)).toEqual(["read-1"]);
  });

  it("--max-tool-calls 1 with two calls: stopped budget_exhausted after exactly one tool start", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n", "b.txt": "b\n" });
    const script = await jsonScript([
      {
        text: "reading both",
        calls: [
          { id: "r-a", name: "read_file", arguments: { path: "a.txt" } },
          { id: "r-b", name: "read_file", arguments: { path: "b.txt" } },
        ],
      },
      { text: "done" },
    ]);
    const result = await run(workspace, script, ["--max-tool-calls", "1", "--json"]);
    expect(result.code).toBe(2);
    expect(jsonSummary(result)).toMatchObject({
      status: "stopped",
      reason: "budget_exhausted",
      tool_calls: 1,
    });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(ofType(records, "tool.started")).toHaveLength(1);
  });

  it("--max-model-requests 1: stopped budget_exhausted after exactly one model request", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const result = await run(workspace, READ_EDIT, [
      "--write",
      "allow",
      "--max-model-requests",
      "1",
      "--json",
    ]);
    expect(result.code).toBe(2);
    expect(jsonSummary(result)).toMatchObject({
      status: "stopped",
      reason: "budget_exhausted",
      model_requests: 1,
    });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(ofType(records, "model.started")).toHaveLength(1);
    expect(await notes(workspace)).toBe(NOTES);
  });

  it.each([
    ["with no end event", []],
    ["ended for length", [{ type: "end", reason: "length" }]],
  ])(
    "a reply stream %s is a protocol error: nothing runs and the evidence is journaled",
    async (_, ending) => {
      const workspace = await workspaceWith({ "notes.txt": NOTES });
      const script = await jsonScript([
        {
          stream: [
            { type: "text_delta", text: "Let me write" },
            {
              type: "tool_call_delta",
              call_id: "w-1",
              name: "write_file",
              arguments: '{"path":"notes.txt","con',
            },
            ...ending,
          ],
        },
        { text: "never reached" },
      ]);
      const result = await run(workspace, script, ["--write", "allow", "--json"]);
      expect(result.code).toBe(2);
      expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "protocol_error" });
      const records = await readJournal(workspace, String(jsonSummary(result).session));
      expect(ofType(records, "tool.started")).toHaveLength(0);
      expect(ofType(records, "model.reply")).toHaveLength(0);
      const [fault] = ofType(records, "model.protocol_error");
      const evidence = fault!.data.evidence as {
        text: string;
        calls: { id: string; name?: string; arguments: string }[];
      };
      expect(evidence.text).toBe("Let me write");
      expect(evidence.calls).toEqual([
        { id: "w-1", name: "write_file", arguments: '{"path":"notes.txt","con' },
      ]);
      expect(await notes(workspace)).toBe(NOTES);
    },
  );

  it("a call id reused by a later reply is a protocol error and that reply's call never starts", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const script = await jsonScript([
      { text: "read", calls: [{ id: "c-1", name: "read_file", arguments: { path: "notes.txt" } }] },
      {
        text: "again",
        calls: [{ id: "c-1", name: "write_file", arguments: { path: "x.txt", content: "x" } }],
      },
      { text: "never reached" },
    ]);
    const result = await run(workspace, script, ["--write", "allow", "--json"]);
    expect(result.code).toBe(2);
    expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "protocol_error" });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(ofType(records, "tool.started").map((r) => [r.data.call_id, r.data.name])).toEqual([
      ["c-1", "read_file"],
    ]);
    const [fault] = ofType(records, "model.protocol_error");
    expect(String(fault!.data.error)).toContain("c-1");
    expect(ofType(records, "model.reply")).toHaveLength(1);
    expect(await readFile(join(workspace, "x.txt")).catch(() => null)).toBeNull();
  });

  it("a transient model error is retried, journaled, and both attempts count as model requests", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const script = await jsonScript([
      { error: { kind: "transient", message: "overloaded" } },
      { text: "all good" },
    ]);
    const result = await run(workspace, script, ["--json"]);
    expect(result.code).toBe(0);
    expect(jsonSummary(result)).toMatchObject({
      status: "unverified",
      model_requests: 2,
      answer: "all good",
    });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const [retry] = ofType(records, "model.retryable_error");
    expect(retry!.data).toMatchObject({ step: 0, attempt: 0, message: "overloaded" });
    expect(ofType(records, "model.started").map((r) => r.data.attempt)).toEqual([0, 1]);
  });

  it("a fatal model error stops the run with provider_error", async () => {
    const workspace = await workspaceWith({ "notes.txt": NOTES });
    const script = await jsonScript([
      { error: { kind: "fatal", message: "bad key" } },
      { text: "never reached" },
    ]);
    const result = await run(workspace, script, ["--json"]);
    expect(result.code).toBe(2);
    expect(jsonSummary(result)).toMatchObject({
      status: "stopped",
      reason: "provider_error",
      model_requests: 1,
    });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(ofType(records, "model.failed")).toHaveLength(1);
    expect(ofType(records, "model.retryable_error")).toHaveLength(0);
  });
});
