import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyJournal } from "../../src/journal/verify.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  harness,
  journalFile,
  jsonScript,
  ofType,
  onStdoutLine,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * `batch` through the built CLI: hostile programs each end bounded with a structured error and
 * nothing escapes (canary files inside and outside the workspace keep their bytes, no process is
 * spawned, the journal verifies); sub-calls are journaled and shown by inspect; a batch cut by
 * SIGKILL is re-run on resume with its earlier sub-calls' results kept.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const call = (id: string, program: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: "batch",
  arguments: { program, ...extra },
});

/** Each hostile program, and the code (and limit) its batch call must end with. */
const HOSTILE: { id: string; program: string; code: string; limit?: string }[] = [
  {
    id: "globals",
    program: `const names = Object.getOwnPropertyNames(globalThis);
      if (names.some((n) => ["process", "require", "fetch", "module", "Buffer", "Deno", "Bun", "Date", "setTimeout"].includes(n))) throw new Error("ambient: " + names.join());
      throw new Error("globals-ok " + names.length);`,
    code: "BATCH_PROGRAM_ERROR",
  },
  { id: "process", program: `return process.env.HOME;`, code: "BATCH_PROGRAM_ERROR" },
  {
    id: "require",
    program: `return require("node:fs").writeFileSync(CANARY, "owned");`,
    code: "BATCH_PROGRAM_ERROR",
  },
  {
    id: "import",
    program: `const fs = await import("node:fs"); fs.writeFileSync(CANARY, "owned");`,
    code: "BATCH_PROGRAM_ERROR",
  },
  { id: "fetch", program: `await fetch("http://127.0.0.1:9/");`, code: "BATCH_PROGRAM_ERROR" },
  {
    id: "eval",
    program: `const viaEval = eval("typeof process"); const viaFunction = Function("return typeof require")();
      const viaCtor = tools.read_file.constructor.constructor("return typeof process")();
      throw new Error([viaEval, viaFunction, viaCtor].join(","));`,
    code: "BATCH_PROGRAM_ERROR",
  },
  { id: "loop", program: `for (;;) {}`, code: "BATCH_LIMIT", limit: "instructions" },
  {
    id: "memory",
    program: `const a = []; for (;;) a.push({ i: a.length, s: "x" + a.length });`,
    code: "BATCH_LIMIT",
    limit: "memory",
  },
  {
    id: "flood",
    program: `const all = []; for (let i = 0; i < 10000; i++) all.push(tools.read_file({ path: "canary.txt" })); await Promise.all(all);`,
    code: "BATCH_LIMIT",
    limit: "calls",
  },
  { id: "huge", program: `return "z".repeat(2 * 1024 * 1024);`, code: "BATCH_LIMIT", limit: "bytes" },
];

describe("hostile batch programs", () => {
  it("each ends bounded with a structured error; nothing escapes the interpreter", {
    timeout: 120_000,
  }, async () => {
    const workspace = await workspaceWith({ "canary.txt": "inside\n" });
    const outsideDir = await tempDir("harness-batch-outside-");
    const outside = join(outsideDir, "canary.txt");
    await writeFile(outside, "outside\n");
    const programs = HOSTILE.map((h) => call(h.id, h.program.replaceAll("CANARY", JSON.stringify(outside))));
    const writes = call(
      "writes",
      `const out = [];
       for (const [name, args] of [["write_file", { path: "canary.txt", content: "owned" }], ["shell", { command: "echo owned > canary.txt" }]]) {
         try { await tools[name](args); out.push(name + " ran"); } catch (e) { out.push(e.code); }
       }
       return out;`,
    );
    const script = await jsonScript([{ text: "", calls: [...programs, writes] }, { text: "done" }]);
    const id = "hostile";
    const result = await harness([
      ...["run", "--script", script, "--workspace", workspace, "--session", id, "--json"],
      ...["--write", "allow", "--shell", "allow", "probe"],
    ]);
    expectExit(result, 0);
    const journal = await readJournal(workspace, id);
    const results = new Map(ofType(journal, "tool.result").map((r) => [String(r.data.call_id), r.data]));
    for (const hostile of HOSTILE) {
      const got = results.get(hostile.id);
      expect([hostile.id, got?.status, got?.error_type]).toEqual([hostile.id, "error", hostile.code]);
      if (hostile.limit) expect((got?.data as { limit?: string } | undefined)?.limit).toBe(hostile.limit);
      // Structured, never a stack trace of the host.
      expect(String(got?.content)).not.toMatch(/\bat .*\.(js|ts):\d+/);
    }
    expect(String(results.get("globals")?.summary)).toContain("globals-ok");
    expect(String(results.get("eval")?.summary)).toContain("undefined,undefined,undefined");
    const writesResult = results.get("writes")!;
    expect((writesResult.data as { value: unknown }).value).toEqual([
      "BATCH_TOOL_FORBIDDEN",
      "BATCH_TOOL_FORBIDDEN",
    ]);
    // Every hostile attempt left the canaries alone and started no process.
    expect(await readFile(join(workspace, "canary.txt"), "utf8")).toBe("inside\n");
    expect(await readFile(outside, "utf8")).toBe("outside\n");
    expect(ofType(journal, "process.spawned")).toEqual([]);
    expect(ofType(journal, "workspace.changed")).toEqual([]);
    expect(
      ofType(journal, "tool.started").filter((r) => ["write_file", "shell"].includes(String(r.data.name))),
    ).toEqual([]);
    // The flood: at most 64 sub-calls, each journaled once with its parent.
    const flood = ofType(journal, "tool.result").filter((r) => r.data.parent_call_id === "flood");
    expect(flood.length).toBeGreaterThan(0);
    expect(flood.length).toBeLessThanOrEqual(64);
    expect((await verifyJournal(journalFile(workspace, id))).ok).toBe(true);
  });
});

describe("sub-calls in the journal and in inspect", () => {
  it("inspect lists CALL/1..N inside their batch call, and --call shows one", async () => {
    const workspace = await workspaceWith({
      "a.txt": "alpha\n",
      "b.txt": "beta\n",
      "secret/k.txt": "hunter2\n",
    });
    const program = `const out = {};
      for (const path of ["a.txt", "b.txt", "secret/k.txt"]) {
        try { out[path] = (await tools.read_file({ path })).content.includes("a"); } catch (e) { out[path] = e.code; }
      }
      return out;`;
    const script = await jsonScript([
      { text: "", calls: [call("b1", program, { expected: 3 })] },
      { text: "done" },
    ]);
    const id = "inspected";
    const result = await harness([
      ...["run", "--script", script, "--workspace", workspace, "--session", id, "--json"],
      ...["--deny", "read_file(secret/**)", "look"],
    ]);
    expectExit(result, 0);
    const journal = await readJournal(workspace, id);
    const batch = ofType(journal, "tool.result").find((r) => r.data.call_id === "b1")!.data;
    expect(String(batch.content).split("\n")[0]).toBe(
      "observed 2 of 3 expected; 1 failed: b1/3 read_file POLICY_DENIED",
    );
    expect(batch.data).toMatchObject({
      calls: 3,
      observed: 2,
      expected: 3,
      value: { "a.txt": true, "b.txt": true, "secret/k.txt": "POLICY_DENIED" },
    });
    const inspected = await harness(["inspect", id, "--workspace", workspace]);
    expectExit(inspected, 0);
    expect(inspected.stdout).toContain("started read_file#b1/1 (batch 0, inside b1)");
    expect(inspected.stdout).toMatch(/denied POLICY_DENIED read_file#b1\/3 \(inside b1\)/);
    const one = await harness(["inspect", id, "--workspace", workspace, "--call", "b1/2", "--json"]);
    expectExit(one, 0);
    expect(JSON.parse(one.stdout)).toMatchObject({
      call_id: "b1/2",
      name: "read_file",
      arguments: { path: "b.txt" },
    });
  });
});

describe("a batch cut by a crash", () => {
  it("is re-run on resume, journaled as re-run, the earlier sub-calls' results kept", {
    timeout: 120_000,
  }, async () => {
    const files = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}.txt`, `file ${i}\n`]));
    const workspace = await workspaceWith(files);
    const program = `let n = 0;
      for (let i = 0; i < 50; i++) { await tools.read_file({ path: "f" + i + ".txt" }); n += 1; }
      return n;`;
    const script = await jsonScript([
      { text: "", calls: [call("k1", program, { expected: 50 })] },
      { text: "done" },
    ]);
    const id = "crashed";
    const args = ["--script", script, "--workspace", workspace];
    const child = startHarness(["run", ...args, "--session", id, "--events", "read them"]);
    let killed = false;
    onStdoutLine(child, (line) => {
      // Killed as soon as a few of the program's sub-calls are durable: the batch is mid-way.
      if (!killed && line.includes('"k1/3"') && line.includes('"tool.result"')) {
        killed = true;
        child.kill("SIGKILL");
      }
    });
    await finished(child);
    expect(killed).toBe(true);
    const before = await readJournal(workspace, id);
    expect(ofType(before, "tool.result").some((r) => r.data.call_id === "k1")).toBe(false);
    const earlier = ofType(before, "tool.result").filter((r) => r.data.parent_call_id === "k1");
    expect(earlier.length).toBeGreaterThanOrEqual(3);

    const resumed = await harness(["resume", id, ...args, "--json"]);
    expectExit(resumed, 0);
    const after = await readJournal(workspace, id);
    expect(after.slice(0, before.length)).toEqual(before);
    const results = ofType(after, "tool.result");
    const batch = results.find((r) => r.data.call_id === "k1")!.data;
    expect(batch.status).toBe("ok");
    expect(String(batch.summary)).toMatch(/^re-run after an interruption: observed 50 of 50 sub-calls/);
    expect(batch.data).toMatchObject({
      value: 50,
      observed: 50,
      expected: 50,
      reconciled: true,
      rerun: { prefix: "k1/r1" },
    });
    const rerun = results.filter((r) => String(r.data.call_id).startsWith("k1/r1/"));
    expect(rerun.map((r) => r.data.call_id)).toEqual(Array.from({ length: 50 }, (_, i) => `k1/r1/${i + 1}`));
    // Every earlier sub-call kept its result; one cut mid-way is closed as interrupted, not unknown.
    for (const record of earlier)
      expect(results.filter((r) => r.data.call_id === record.data.call_id)).toHaveLength(1);
    const started = ofType(after, "tool.started").map((r) => String(r.data.call_id));
    const settled = new Set(results.map((r) => String(r.data.call_id)));
    for (const callId of started) expect(settled.has(callId)).toBe(true);
    expect(results.some((r) => r.data.status === "unknown")).toBe(false);
    expect((await verifyJournal(journalFile(workspace, id))).ok).toBe(true);
    expect(existsSync(join(workspace, "f0.txt"))).toBe(true);
  });
});
