import { statSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  journalFile,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * A hostile model: replies with JSON nested 100,000 deep, tens of megabytes of argument text,
 * lone surrogates, numbers that parse to Infinity, hundreds of calls, overlong names with
 * control characters. Each run goes through the built CLI with a scripted model; none may end
 * in an internal error (exit 1) or print a stack trace, every journal must verify, and a reply
 * that cannot be processed must not make `resume` loop.
 */

const ORIGINAL = "original\n";
let config: string;

beforeAll(async () => {
  ensureBuilt();
  config = join(await tempDir("harness-config-"), "config.json");
  await writeFile(config, "{}");
});
afterAll(removeTempDirs);

function cli(args: string[]): Promise<CliResult> {
  return finished(startHarness(args, { env: { ...childEnv(), HARNESS_CONFIG: config } }));
}

function expectNoCrash(result: CliResult): void {
  expect(result.code).not.toBe(1);
  expect(result.stderr).not.toMatch(/internal error/);
  expect(result.stderr).not.toMatch(/\n\s+at /); // a stack frame
}

async function expectJournalVerifies(workspace: string, session: string): Promise<void> {
  const verified = await cli(["journal", "verify", session, "--workspace", workspace]);
  expectExit(verified, 0);
  expect(verified.stdout + verified.stderr).toMatch(/intact/);
}

const stream = (events: unknown[]) => ({ stream: events });
const call = (call_id: string, name: string, args: string) => ({
  type: "tool_call_delta",
  call_id,
  name,
  arguments: args,
});
const toolsEnd = { type: "end", reason: "tool_calls" };

const deep = `{"path":"target.txt","content":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
const huge = JSON.stringify({ path: "target.txt", content: "A".repeat(20 * 1024 * 1024) });

describe("a call whose arguments break a limit is refused with INVALID_ARGUMENTS, and the run goes on", () => {
  it.each([
    ["JSON nested 100,000 deep", deep, "nested deeper than 64 levels"],
    ["a 20 MB string", huge, "longer than 1048576 characters"],
    ["a lone surrogate", '{"path":"target.txt","content":"\\ud800"}', "lone UTF-16 surrogate"],
    ["a number that parses to Infinity", '{"path":"target.txt","content":"x","n":1e999}', "out of range"],
  ])(
    "%s",
    async (_name, args, reason) => {
      const workspace = await workspaceWith({ "target.txt": ORIGINAL });
      const script = await jsonScript([
        stream([call("bad-1", "write_file", args), toolsEnd]),
        { text: "I could not do it." },
      ]);
      const result = await cli([
        ...[
          "run",
          "--script",
          script,
          "--workspace",
          workspace,
          "--write",
          "allow",
          "--session",
          "s",
          "--json",
        ],
        "overwrite target.txt",
      ]);
      expectNoCrash(result);
      expectExit(result, 0);
      expect(jsonSummary(result)).toMatchObject({ status: "unverified", model_requests: 2, tool_calls: 0 });

      const records = await readJournal(workspace, "s");
      const [reply] = ofType(records, "model.reply");
      expect(reply?.data.calls).toEqual([
        expect.objectContaining({
          id: "bad-1",
          name: "write_file",
          arguments: {},
          refused: expect.objectContaining({
            reason: expect.stringContaining(reason),
            characters: args.length,
          }),
        }),
      ]);
      expect(ofType(records, "tool.started")).toEqual([]);
      const results = ofType(records, "tool.result");
      expect(results.map((r) => [r.data.call_id, r.data.status, r.data.error_type])).toEqual([
        ["bad-1", "invalid", "INVALID_ARGUMENTS"],
      ]);
      expect(String(results[0]?.data.summary)).toContain(reason);
      // Nothing was written, and the journal stayed small however large the reply was.
      expect(await readFile(join(workspace, "target.txt"), "utf8")).toBe(ORIGINAL);
      expect(statSync(journalFile(workspace, "s")).size).toBeLessThan(64 * 1024);
      await expectJournalVerifies(workspace, "s");
    },
    60_000,
  );

  it("odd Unicode in text and arguments is recorded faithfully (NUL, U+2028/2029, controls, bidi overrides)", async () => {
    const workspace = await workspaceWith({});
    const content = "nul\u0000 ls\u2028 ps\u2029 esc\u001b[2J bidi\u202e end\n";
    const script = await jsonScript([
      stream([
        { type: "text_delta", text: "text with a lone \ud800 surrogate and \u0000" },
        call("w-1", "write_file", JSON.stringify({ path: "odd.txt", content })),
        toolsEnd,
      ]),
      { text: "done" },
    ]);
    const result = await cli([
      ...[
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--write",
        "allow",
        "--session",
        "u",
        "--json",
      ],
      "write odd.txt",
    ]);
    expectNoCrash(result);
    expectExit(result, 0);
    expect(await readFile(join(workspace, "odd.txt"), "utf8")).toBe(content);
    const [reply] = ofType(await readJournal(workspace, "u"), "model.reply");
    expect(reply?.data.text).toBe("text with a lone \ufffd surrogate and \u0000");
    await expectJournalVerifies(workspace, "u");
  }, 60_000);
});

describe("a reply that cannot be processed as a whole is a protocol error, and resume does not loop", () => {
  const manyCalls = Array.from({ length: 500 }, (_, i) => call(`c${i}`, "read_file", '{"path":"a"}'));
  const longName = call("n-1", `write\u001b]0;pwned\u0007${"x".repeat(5000)}`, "{}");
  const hugeText = { type: "text_delta", text: "T".repeat(5 * 1024 * 1024) };

  it.each([
    ["500 tool calls", [...manyCalls, toolsEnd], "more than 128 tool calls"],
    ["an overlong tool name with control characters", [longName, toolsEnd], "tool name is longer than 128"],
    ["5 MB of text", [hugeText, { type: "end", reason: "stop" }], "text is longer than"],
  ])(
    "%s",
    async (_name, events, message) => {
      const workspace = await workspaceWith({ "target.txt": ORIGINAL });
      // The model answers every request with the same hostile reply.
      const dir = await tempDir("harness-script-");
      const script = join(dir, "hostile.mjs");
      await writeFile(script, `export default () => ({ stream: ${JSON.stringify(events)} });\n`);
      const args = ["--script", script, "--workspace", workspace, "--write", "allow", "--json"];

      const first = await cli(["run", ...args, "--session", "p", "go"]);
      expectNoCrash(first);
      expectExit(first, 2);
      expect(jsonSummary(first)).toMatchObject({
        status: "stopped",
        reason: "protocol_error",
        model_requests: 1,
      });

      for (let resume = 1; resume <= 2; resume++) {
        const again = await cli(["resume", "p", ...args]);
        expectNoCrash(again);
        expectExit(again, 2);
        // One request per resume: the recorded error is final for that attempt, never replayed in a loop.
        expect(jsonSummary(again)).toMatchObject({ reason: "protocol_error", model_requests: 1 + resume });
      }

      const records = await readJournal(workspace, "p");
      const errors = ofType(records, "model.protocol_error");
      expect(errors).toHaveLength(3);
      expect(String(errors[0]?.data.error)).toContain(message);
      expect(ofType(records, "model.reply")).toEqual([]);
      expect(ofType(records, "tool.started")).toEqual([]);
      expect(ofType(records, "model.started")).toHaveLength(3);
      // Bounded evidence: at most 16 calls and a few KB per string, whatever the model sent.
      expect((errors[0]!.data.evidence as { calls: unknown[] }).calls.length).toBeLessThanOrEqual(16);
      expect(statSync(journalFile(workspace, "p")).size).toBeLessThan(200 * 1024);
      expect(await readFile(join(workspace, "target.txt"), "utf8")).toBe(ORIGINAL);
      await expectJournalVerifies(workspace, "p");
    },
    60_000,
  );
});

describe("scripts that are broken", () => {
  it.each([
    ["a syntax error", "export default function ( {\n", "SyntaxError"],
    ["a throw on import", 'throw new Error("boom at import");\n', "boom at import"],
    ["no default export", "export const reply = 1;\n", "the default export must be a function"],
  ])(
    "an .mjs script with %s is a usage error (64), one line, no stack, no session",
    async (_n, source, text) => {
      const workspace = await workspaceWith({});
      const dir = await tempDir("harness-script-");
      const script = join(dir, "broken.mjs");
      await writeFile(script, source);
      const result = await cli(["run", "--script", script, "--workspace", workspace, "go"]);
      expectExit(result, 64);
      expect(result.stderr).toContain("bad script: broken.mjs");
      expect(result.stderr).toContain(text);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(sessionIds(workspace)).toEqual([]);
    },
  );

  it("a JSON script whose arguments nest 100,000 deep is a usage error (64), not a crash", async () => {
    const workspace = await workspaceWith({});
    const dir = await tempDir("harness-script-");
    const script = join(dir, "deep.json");
    const nested = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    await writeFile(
      script,
      `{"replies":[{"calls":[{"id":"a","name":"read_file","arguments":{"x":${nested}}}]}]}`,
    );
    const result = await cli(["run", "--script", script, "--workspace", workspace, "go"]);
    expectExit(result, 64);
    expect(result.stderr).toContain("bad script: deep.json");
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(sessionIds(workspace)).toEqual([]);
  });

  it.each([
    ["undefined", "() => undefined", "returned undefined"],
    ["a number", "() => 42", "returned number"],
    ["a malformed object", '() => ({ calls: "rm -rf /" })', "invalid scripted reply"],
    ["a throw", '() => { throw new Error("inside the script"); }', "inside the script"],
  ])(
    "a script function returning %s stops the run with a fatal SCRIPT_ERROR, never retried",
    async (_n, fn, text) => {
      const workspace = await workspaceWith({});
      const dir = await tempDir("harness-script-");
      const script = join(dir, "bad-reply.mjs");
      await writeFile(script, `export default ${fn};\n`);
      const result = await cli([
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--session",
        "f",
        "--json",
        "go",
      ]);
      expectNoCrash(result);
      expectExit(result, 2);
      expect(jsonSummary(result)).toMatchObject({
        status: "stopped",
        reason: "provider_error",
        model_requests: 1,
      });
      const records = await readJournal(workspace, "f");
      expect(ofType(records, "model.retryable_error")).toEqual([]);
      const failed = ofType(records, "model.failed");
      expect(failed.map((r) => r.data.code)).toEqual(["SCRIPT_ERROR"]);
      expect(String(failed[0]?.data.message)).toContain(text);
      await expectJournalVerifies(workspace, "f");
    },
  );
});
