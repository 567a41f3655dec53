import { existsSync, readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionState } from "../../src/engine/state.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * Background processes (`shell` with `background: true`) through the built CLI with a scripted
 * model: ready when a port listens inside the sandbox, output read with process_output, stopped
 * with their whole tree at the turn's end, at a TTL, by process_stop; what a watcher writes is the
 * starting call's and `harness undo` reverts it; a SIGKILLed harness leaves nothing running, and
 * the resume journals each process lost and tells the model.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

async function config(): Promise<string> {
  const file = join(await tempDir("harness-config-"), "config.json");
  await writeFile(file, "{}");
  return file;
}

/** A unique number to find a command's processes by on the host. */
function token(): string {
  return `${40_000 + Math.floor(Math.random() * 20_000)}.${Math.floor(Math.random() * 1000)}`;
}

/** Host processes whose command line holds `needle`. */
function liveWith(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (/\) Z /.test(stat)) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(needle)) found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

async function run(workspace: string, replies: unknown[], extra: string[] = []) {
  const script = await jsonScript(replies);
  const result = await finished(
    startHarness(
      ["run", "--script", script, "--workspace", workspace, "--shell", "allow", "--json", ...extra, "go"],
      { env: { ...childEnv(), HARNESS_CONFIG: await config() } },
    ),
  );
  const summary = jsonSummary(result);
  const journal = await readJournal(workspace, String(summary.session));
  return { result, summary, journal, session: String(summary.session) };
}

const shell = (id: string, args: Record<string, unknown>) => ({ id, name: "shell", arguments: args });

describe("a background server", () => {
  it("is ready once its port listens in the sandbox, shows its output, and is stopped at the turn's end with no survivor", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const mark = token();
    const server = `node -e "require('http').createServer((q, r) => r.end('pong')).listen(${port}, '127.0.0.1', () => console.log('listening on ${port}')); setInterval(() => {}, 1000) // ${mark}"`;
    const { result, journal } = await run(workspace, [
      { calls: [shell("s1", { command: server, background: true, ready: { port, timeout_ms: 20_000 } })] },
      {
        calls: [
          { id: "o1", name: "process_output", arguments: { id: "bg-s1" } },
          { id: "l1", name: "process_list", arguments: {} },
        ],
      },
      { text: "done" },
    ]);
    expectExit(result, 0);
    const results = resultsByCall(journal);
    expect(results.get("s1")).toMatchObject({
      status: "ok",
      data: { process_id: "bg-s1", ready_by: "port" },
    });
    expect(String(results.get("s1")?.content)).toContain("process_id: bg-s1");
    expect(results.get("o1")).toMatchObject({ status: "ok" });
    expect(String(results.get("o1")?.content)).toContain(`listening on ${port}`);
    expect(String(results.get("l1")?.content)).toMatch(/bg-s1\trunning/);
    const [started] = ofType(journal, "process.started");
    expect(started?.data).toMatchObject({
      process_id: "bg-s1",
      call_id: "s1",
      keep: "turn",
      sandboxed: true,
    });
    expect(ofType(journal, "process.ready")[0]?.data).toMatchObject({ process_id: "bg-s1", by: "port" });
    const stopped = ofType(journal, "process.stopped");
    expect(stopped).toHaveLength(1);
    expect(stopped[0]?.data).toMatchObject({ process_id: "bg-s1", reason: "turn_end", survivors: 0 });
    expect(Number(stopped[0]?.data.killed)).toBeGreaterThan(0);
    expect(liveWith(mark)).toEqual([]);
  }, 90_000);

  it("fails with its output's tail when it exits before it is ready", async () => {
    const workspace = await workspaceWith({});
    const { result, journal } = await run(workspace, [
      {
        calls: [
          shell("s1", {
            command: "echo starting; echo 'port in use' >&2; exit 3",
            background: true,
            ready: { log: "^READY$", timeout_ms: 20_000 },
          }),
        ],
      },
      { text: "done" },
    ]);
    expectExit(result, 0);
    const s1 = resultsByCall(journal).get("s1");
    expect(s1).toMatchObject({ status: "error", error_type: "PROCESS_ERROR" });
    expect(String(s1?.content)).toContain("port in use");
    expect(String(s1?.content)).toContain("exited before it was ready (exit 3");
    expect(ofType(journal, "process.ready")).toHaveLength(0);
    expect(ofType(journal, "process.stopped")[0]?.data).toMatchObject({
      process_id: "bg-s1",
      reason: "not_ready",
      exit: 3,
      survivors: 0,
    });
  }, 90_000);
});

describe("a background process's lifetime", () => {
  it("ends at its TTL, while the turn goes on", async () => {
    const workspace = await workspaceWith({});
    const mark = token();
    const { result, journal } = await run(workspace, [
      {
        calls: [
          shell("s1", {
            command: `echo READY; sleep ${mark}`,
            background: true,
            ready: { log: "READY" },
            ttl_ms: 400,
            keep: "session",
          }),
        ],
      },
      { calls: [shell("s2", { command: "sleep 2" })] },
      { calls: [{ id: "l1", name: "process_list", arguments: {} }] },
      { text: "done" },
    ]);
    expectExit(result, 0);
    const l1 = String(resultsByCall(journal).get("l1")?.content);
    expect(l1).toMatch(/bg-s1\tstopped \(ttl\)/);
    const stopped = ofType(journal, "process.stopped");
    expect(stopped).toHaveLength(1);
    expect(stopped[0]?.data).toMatchObject({ process_id: "bg-s1", reason: "ttl", survivors: 0 });
    // Stopped before the second call's result: the TTL fired during the turn.
    const s2 = journal.findIndex((r) => r.type === "tool.result" && r.data.call_id === "s2");
    expect(journal.indexOf(stopped[0]!)).toBeLessThan(s2);
    expect(liveWith(mark)).toEqual([]);
  }, 90_000);

  it("process_stop kills a tree that double-forked and called setsid: nothing survives", async () => {
    const workspace = await workspaceWith({});
    const a = token();
    const b = token();
    const command = [
      `setsid sh -c 'sleep ${a}' </dev/null >/dev/null 2>&1 &`,
      `(sh -c 'sleep ${b}' </dev/null >/dev/null 2>&1 &) &`,
      "echo READY",
      "sleep 600",
    ].join("\n");
    const { result, journal } = await run(workspace, [
      { calls: [shell("s1", { command, background: true, ready: { log: "READY" } })] },
      { calls: [{ id: "p1", name: "process_stop", arguments: { id: "bg-s1" } }] },
      { text: "done" },
    ]);
    expectExit(result, 0);
    const p1 = resultsByCall(journal).get("p1");
    expect(p1).toMatchObject({
      status: "ok",
      data: { process_id: "bg-s1", survivors: 0, reason: "stopped" },
    });
    const stopped = ofType(journal, "process.stopped");
    expect(stopped).toHaveLength(1);
    // The shell, its sleep and both escapees were alive and were killed.
    expect(Number(stopped[0]?.data.killed)).toBeGreaterThanOrEqual(3);
    expect(liveWith(a)).toEqual([]);
    expect(liveWith(b)).toEqual([]);
  }, 90_000);
});

describe("what a background watcher writes", () => {
  it("is recorded as the starting call's change, and harness undo reverts it", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    // It writes once it is ready, and again as it stops (a server flushing its state on SIGTERM).
    const command = [
      "trap 'echo more >> notes.txt; exit 0' TERM",
      "echo READY",
      "echo generated > out.txt",
      "while :; do sleep 0.1; done",
    ].join("\n");
    const { result, journal, session } = await run(workspace, [
      { calls: [shell("s1", { command, background: true, ready: { log: "READY" } })] },
      { calls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }] },
      { text: "done" },
    ]);
    expectExit(result, 0);
    expect(readFileSync(join(workspace, "out.txt"), "utf8")).toBe("generated\n");
    expect(readFileSync(join(workspace, "notes.txt"), "utf8")).toBe("hi\nmore\n");
    const changed = ofType(journal, "workspace.changed");
    const paths = (kind: string) =>
      changed.flatMap((r) => (r.data[kind] as { path: string }[]).map((c) => [r.data.call_id, c.path]));
    expect(paths("created")).toContainEqual(["s1", "out.txt"]);
    // The write on SIGTERM came after the turn's stop: compared then, still the starting call's.
    expect(paths("modified")).toContainEqual(["s1", "notes.txt"]);
    const stoppedAt = journal.findIndex((r) => r.type === "process.stopped");
    const lastChange = journal.lastIndexOf(changed.at(-1)!);
    expect(lastChange).toBeGreaterThan(stoppedAt);
    const undo = await harness(["undo", session, "--to", "s1", "--workspace", workspace, "--json"]);
    expectExit(undo, 0);
    expect(existsSync(join(workspace, "out.txt"))).toBe(false);
    expect(readFileSync(join(workspace, "notes.txt"), "utf8")).toBe("hi\n");
  }, 90_000);
});

/** Wait until the session's journal holds `count` records of `type`. */
async function journalHas(workspace: string, session: string, type: string, count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const found = existsSync(join(workspace, ".harness"))
      ? await readJournal(workspace, session).then(
          (records) => ofType(records, type).length,
          () => 0,
        )
      : 0;
    if (found >= count) return;
    if (Date.now() > deadline) throw new Error(`no ${count} ${type} record(s) in time`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("SIGTERM of harness while a background process kept for the session runs", () => {
  it("interrupts the turn and stops it, journaled, with nothing left", async () => {
    const workspace = await workspaceWith({});
    const a = token();
    const script = await jsonScript([
      {
        calls: [
          shell("s1", {
            command: `echo READY; sleep ${a}`,
            background: true,
            ready: { log: "READY" },
            keep: "session",
          }),
        ],
      },
      { calls: [shell("s2", { command: "sleep 60" })] },
      { text: "done" },
    ]);
    const env = { ...childEnv(), HARNESS_CONFIG: await config() };
    const child = startHarness(
      [
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--shell",
        "allow",
        "--session",
        "term1",
        "--json",
        "go",
      ],
      { env },
    );
    const exit = finished(child);
    await journalHas(workspace, "term1", "process.ready", 1);
    child.kill("SIGTERM");
    await exit;
    const journal = await readJournal(workspace, "term1");
    expect(ofType(journal, "process.stopped")[0]?.data).toMatchObject({
      process_id: "bg-s1",
      reason: "interrupt",
      survivors: 0,
    });
    expect(liveWith(a)).toEqual([]);
  }, 90_000);
});

describe("SIGKILL of harness with two background processes", () => {
  it("leaves nothing running; the resume journals each lost and tells the model", async () => {
    const workspace = await workspaceWith({});
    const a = token();
    const b = token();
    const script = await jsonScript([
      {
        calls: [
          shell("s1", {
            command: `echo READY; sleep ${a}`,
            background: true,
            ready: { log: "READY" },
            keep: "session",
          }),
        ],
      },
      {
        calls: [
          shell("s2", { command: `echo READY; sleep ${b}`, background: true, ready: { log: "READY" } }),
        ],
      },
      { calls: [shell("s3", { command: "sleep 60" })] },
      { text: "done" },
    ]);
    const env = { ...childEnv(), HARNESS_CONFIG: await config() };
    const flags = ["--script", script, "--workspace", workspace, "--shell", "allow"];
    const first = startHarness(["run", ...flags, "--session", "crash1", "--json", "go"], { env });
    const exit = finished(first);
    // Kill it once both processes are recorded ready (while the third call sleeps).
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ready = existsSync(join(workspace, ".harness"))
        ? await readJournal(workspace, "crash1").then(
            (records) => ofType(records, "process.ready").length,
            () => 0,
          )
        : 0;
      if (ready === 2 && liveWith(a).length > 0 && liveWith(b).length > 0) break;
      if (Date.now() > deadline) throw new Error("the background processes never became ready");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    first.kill("SIGKILL");
    await exit;
    // bwrap dies with its parent, and its pid namespace with it.
    const gone = Date.now() + 5_000;
    while ((liveWith(a).length > 0 || liveWith(b).length > 0) && Date.now() < gone)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(liveWith(a)).toEqual([]);
    expect(liveWith(b)).toEqual([]);

    const resumed = await finished(startHarness(["resume", "crash1", ...flags, "--json"], { env }));
    const journal = await readJournal(workspace, "crash1");
    const lost = ofType(journal, "process.lost").map((r) => r.data.process_id);
    expect(lost.sort()).toEqual(["bg-s1", "bg-s2"]);
    // The model's transcript holds the notice for each.
    const state = SessionState.from(journal as unknown as AnyRecord[]);
    const said = state.messages.map((m) => ("content" in m ? String(m.content) : "")).join("\n");
    expect(said).toContain("process bg-s1 was lost");
    expect(said).toContain("process bg-s2 was lost");
    expect(resumed.code).not.toBeNull();
  }, 120_000);
});
