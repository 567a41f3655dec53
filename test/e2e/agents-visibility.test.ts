import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedChromium, watch } from "../viewer/browser.js";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  isTransientLine,
  journalFile,
  lockFile,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { StdioServer, serverConfig, serverEnv } from "./serve-support.js";

/*
 * Sub-agents seen from every door that shows a session: inspect, journal verify, report, policy
 * explain and run --events. One scripted parent delegates to `worker`, which delegates to `sub`
 * (--agents-depth 2); what each command shows is compared with the journals on disk.
 */

/** Markup a child's model might write: the report must show it as text. */
const IMG = "<img src=x onerror=\"document.title='pwned-agent'\">";

const browser = sharedChromium();
beforeAll(ensureBuilt);
afterAll(removeTempDirs);

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

interface Run {
  workspace: string;
  id: string;
  stdout: string;
}

/** Parent → worker (appends to notes.txt with shell, then delegates) → sub (writes sub.txt, proposed to the worker). */
async function delegatedRun(
  extraFlags: string[] = [],
  before?: (workspace: string, id: string) => Promise<void>,
): Promise<Run> {
  const workspace = await workspaceWith({ "notes.txt": "one\n" });
  const script = {
    replies: [{ text: "", calls: [call("a1", "agent", { task: "work", label: "worker" })] }, { text: "ok" }],
    agents: {
      worker: {
        replies: [
          { text: "", calls: [call("c1", "shell", { command: "echo two >> notes.txt" })] },
          { text: "", calls: [call("g1", "agent", { task: "deeper", label: "sub" })] },
          { text: `worker done ${IMG}` },
        ],
        agents: {
          sub: {
            replies: [
              { text: "", calls: [call("s1", "write_file", { path: "sub.txt", content: "deep\n" })] },
              { text: "sub done" },
            ],
          },
        },
      },
    },
  };
  const file = join(await tempDir("harness-agents-vis-"), "script.json");
  await writeFile(file, JSON.stringify(script));
  const id = `s${Math.random().toString(16).slice(2, 10)}`;
  await before?.(workspace, id);
  const result = await finished(
    startHarness(
      [
        "run",
        "--script",
        file,
        "--workspace",
        workspace,
        "--session",
        id,
        "--write",
        "allow",
        "--shell",
        "allow",
        "--agents-depth",
        "2",
        ...extraFlags,
        "delegate",
      ],
      { env: { ...childEnv(), HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") } },
    ),
  );
  expectExit(result, 0);
  return { workspace, id, stdout: result.stdout };
}

let shared: Run;
beforeAll(async () => {
  shared = await delegatedRun(["--events"]);
}, 120_000);

describe("run --events", () => {
  it("prints the children's records too, each tagged with its agent path (a/b for a grandchild)", async () => {
    const lines = shared.stdout
      .split("\n")
      .filter((line) => line !== "" && !isTransientLine(line))
      .map((line) => JSON.parse(line) as { seq: number; type: string; hash: string; agent?: string });
    const own = lines.filter((line) => line.agent === undefined);
    const worker = lines.filter((line) => line.agent === "worker");
    const sub = lines.filter((line) => line.agent === "worker/sub");
    // Each tagged stream is exactly the child's journal, in order, by hash.
    const workerJournal = await readJournal(shared.workspace, `${shared.id}/worker`);
    const subJournal = await readJournal(shared.workspace, `${shared.id}/worker/sub`);
    expect(worker.map((r) => r.hash)).toEqual(workerJournal.map((r) => r.hash));
    expect(sub.map((r) => r.hash)).toEqual(subJournal.map((r) => r.hash));
    expect(own.map((r) => r.hash)).toEqual(
      (await readJournal(shared.workspace, shared.id)).map((r) => r.hash),
    );
    expect(new Set(lines.map((line) => line.agent ?? ""))).toEqual(new Set(["", "worker", "worker/sub"]));
    // A grandchild's record reaches the parent's stream before the worker's agent.finished for it.
    const subEnd = lines.findIndex((line) => line.agent === "worker/sub" && line.type === "run.finished");
    const workerSawSub = lines.findIndex((line) => line.agent === "worker" && line.type === "agent.finished");
    expect(subEnd).toBeGreaterThan(-1);
    expect(workerSawSub).toBeGreaterThan(subEnd);
  });
});

describe("harness inspect", () => {
  it("--json lists the agents with their outcome, spend and changes, grandchildren nested", async () => {
    const result = await harness(["inspect", shared.id, "--workspace", shared.workspace, "--json"]);
    expectExit(result, 0);
    const body = JSON.parse(result.stdout);
    const journal = await readJournal(shared.workspace, shared.id);
    const finishedRecord = journal.find((r) => r.type === "agent.finished")?.data;
    expect(body.agents).toHaveLength(1);
    const [worker] = body.agents;
    expect(worker).toMatchObject({
      label: "worker",
      child_session: `${shared.id}/worker`,
      depth: 1,
      outcome: "unverified",
      usage: finishedRecord?.usage,
      conflicts: [],
    });
    expect(Object.keys(worker).slice(0, 7)).toEqual([
      "label",
      "child_session",
      "depth",
      "outcome",
      "usage",
      "changes",
      "conflicts",
    ]);
    // The sub's write was proposed to the worker (merge "propose"), not merged: the worker changed one file.
    expect(worker.changes).toEqual([
      expect.objectContaining({ path: "notes.txt", added: 1, applied: false }),
    ]);
    expect(worker.agents).toEqual([
      expect.objectContaining({
        label: "sub",
        child_session: `${shared.id}/worker/sub`,
        depth: 2,
        outcome: "unverified",
      }),
    ]);
    expect(worker.agents[0].changes).toEqual([expect.objectContaining({ path: "sub.txt", added: 1 })]);
    // The children's spend is theirs: the worker's usage includes its sub's.
    expect(body.agents_usage.model_requests).toBe(worker.usage.model_requests);
    expect(worker.usage.model_requests).toBe(3 + 2);
  });

  it("shows the tree, nested, and the children's spend beside the session's own", async () => {
    const result = await harness(["inspect", shared.id, "--workspace", shared.workspace]);
    expectExit(result, 0);
    const lines = result.stdout.split("\n");
    const workerLine = lines.find((line) => line.startsWith("  worker  depth 1  unverified"));
    const subLine = lines.find((line) => line.startsWith("    sub  depth 2  unverified"));
    expect(workerLine).toContain("5 model requests, 3 tool calls");
    expect(workerLine).toContain("1 change(s); 0 conflict(s)");
    expect(subLine).toContain("2 model requests, 1 tool calls");
    expect(lines.indexOf(subLine!)).toBeGreaterThan(lines.indexOf(workerLine!));
    const totals = lines.find((line) => line.startsWith("totals"));
    expect(totals).toMatch(
      /^totals {2}2 model requests, 1 tool calls, .*; children: 5 model requests, 3 tool calls/,
    );
  });
});

describe("harness run --json", () => {
  it("adds agents_usage: what the children spent, apart from the session's own counts", async () => {
    const run = await delegatedRun(["--json"]);
    const summary = JSON.parse(run.stdout);
    expect(summary.model_requests).toBe(2);
    expect(summary.agents_usage).toMatchObject({ model_requests: 5, tool_calls: 3 });
  }, 120_000);
});

describe("harness journal verify", () => {
  it("verifies every child journal too, and a byte changed in a grandchild's fails the parent, naming it", async () => {
    const run = await delegatedRun();
    const ok = await harness(["journal", "verify", run.id, "--workspace", run.workspace, "--json"]);
    expectExit(ok, 0);
    const body = JSON.parse(ok.stdout);
    expect(body.children.map((c: { session: string }) => c.session)).toEqual([`${run.id}/worker`]);
    expect(body.children[0].children[0]).toMatchObject({ session: `${run.id}/worker/sub`, ok: true });
    expect(body.head_mismatches).toEqual([]);

    const file = journalFile(run.workspace, `${run.id}/worker/sub`);
    const text = await readFile(file, "utf8");
    await writeFile(file, text.replace("sub done", "sub dune"));
    const bad = await harness(["journal", "verify", run.id, "--workspace", run.workspace]);
    expectExit(bad, 5);
    expect(bad.stdout).toContain(`sub-agent ${run.id}/worker fails verification`);
    expect(bad.stdout).toContain(`journal ${run.id}/worker/sub: TAMPERED`);
    const json = await harness(["journal", "verify", run.id, "--workspace", run.workspace, "--json"]);
    expectExit(json, 5);
    const failed = JSON.parse(json.stdout);
    expect(failed.ok).toBe(false);
    expect(failed.children[0].children[0]).toMatchObject({
      session: `${run.id}/worker/sub`,
      ok: false,
      code: "TAMPERED",
    });
  }, 120_000);

  it("a child journal cut back to an earlier valid record no longer ends at agent.finished's head_hash", async () => {
    const run = await delegatedRun();
    const file = journalFile(run.workspace, `${run.id}/worker`);
    const lines = (await readFile(file, "utf8")).split("\n").filter((line) => line !== "");
    await writeFile(file, `${lines.slice(0, -1).join("\n")}\n`);
    const bad = await harness(["journal", "verify", run.id, "--workspace", run.workspace, "--json"]);
    expectExit(bad, 5);
    const body = JSON.parse(bad.stdout);
    expect(body.head_mismatches).toEqual([
      expect.objectContaining({ child_session: `${run.id}/worker`, actual: JSON.parse(lines.at(-2)!).hash }),
    ]);
  }, 120_000);
});

describe("harness journal verify: a child with no journal", () => {
  it("removed after its parent recorded where it ended: fails, named missing", async () => {
    const run = await delegatedRun();
    await rm(journalFile(run.workspace, `${run.id}/worker`));
    const bad = await harness(["journal", "verify", run.id, "--workspace", run.workspace]);
    expectExit(bad, 5);
    expect(bad.stdout).toContain(
      `journal ${run.id}/worker: missing: its parent ${run.id} records it ending at`,
    );
    expect(bad.stdout).toContain(`sub-agent ${run.id}/worker fails verification`);
  }, 120_000);

  it("that failed before its first record (its lock held by an unknown owner): verifies, said so", async () => {
    const run = await delegatedRun([], async (workspace, id) => {
      // A lock file nobody can judge: the child is refused its journal and fails before recording.
      await mkdir(join(workspace, ".harness", "sessions", id, "worker"), { recursive: true });
      await writeFile(lockFile(workspace, `${id}/worker`), "");
    });
    const parent = await readJournal(run.workspace, run.id);
    const end = parent.find((r) => r.type === "agent.finished");
    expect(end?.data).toMatchObject({ outcome: "failed", head_hash: null });
    const ok = await harness(["journal", "verify", run.id, "--workspace", run.workspace, "--json"]);
    expectExit(ok, 0);
    expect(JSON.parse(ok.stdout).children).toEqual([
      { session: `${run.id}/worker`, ok: true, records: 0, absent: true },
    ]);
    const text = await harness(["journal", "verify", run.id, "--workspace", run.workspace]);
    expect(text.stdout).toContain(
      `journal ${run.id}/worker: no records: its parent ${run.id} records it ended (failed) before its first record`,
    );
  }, 120_000);

  it("whose parent stopped after recording its start (the journal cut there): verifies, said so", async () => {
    const run = await delegatedRun();
    const file = journalFile(run.workspace, run.id);
    const lines = (await readFile(file, "utf8")).split("\n").filter((line) => line !== "");
    const started = lines.findIndex((line) => JSON.parse(line).type === "agent.started");
    await writeFile(file, `${lines.slice(0, started + 1).join("\n")}\n`);
    await rm(join(run.workspace, ".harness", "sessions", run.id, "worker"), { recursive: true });
    const ok = await harness(["journal", "verify", run.id, "--workspace", run.workspace]);
    expectExit(ok, 0);
    expect(ok.stdout).toContain(
      `journal ${run.id}/worker: no records: its parent ${run.id} records starting it and no end`,
    );
  }, 120_000);
});

describe("harness report", () => {
  it("shows each child inside the agent call that started it, its records nested, model text as text", async () => {
    const out = join(await tempDir(), "report.html");
    const result = await harness(["report", shared.id, "--workspace", shared.workspace, "-o", out]);
    expectExit(result, 0);
    const html = await readFile(out, "utf8");
    expect(html).not.toContain(IMG);
    expect(html).toContain("worker done \\u003cimg src=x");
    const page = await browser().newPage();
    const log = watch(page);
    await page.goto(pathToFileURL(out).href);
    await page.locator("#timeline li").first().waitFor();
    const worker = page.locator(`#timeline > li section.agent[data-child-session="${shared.id}/worker"]`);
    await expect.poll(() => worker.count()).toBe(1);
    expect(await worker.locator(".agent-head .status").first().textContent()).toBe("unverified");
    const workerText = (await worker.textContent()) ?? "";
    expect(workerText).toContain("agent worker");
    expect(workerText).toContain("found notes.txt +1 -0");
    expect(workerText).toContain(`worker done ${IMG}`);
    // The grandchild is inside the worker's timeline, under the worker's own agent call.
    const sub = worker.locator(`section.agent[data-child-session="${shared.id}/worker/sub"]`);
    expect(await sub.count()).toBe(1);
    expect(await sub.textContent()).toContain("sub done");
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.title()).toBe("harness session viewer");
    expect(log.pageErrors).toEqual([]);
    await page.close();
  }, 90_000);
});

describe("harness policy explain --session --agent", () => {
  it("decides as the child would: granted shell allow, but the parent's deny shell(curl*) wins, said to be the parent's", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const script = {
      replies: [
        { text: "", calls: [call("a1", "agent", { task: "t", label: "net", shell: "allow" })] },
        { text: "ok" },
      ],
      agents: { net: { replies: [{ text: "done" }] } },
    };
    const file = join(await tempDir("harness-agents-vis-"), "script.json");
    await writeFile(file, JSON.stringify(script));
    const id = `s${Math.random().toString(16).slice(2, 10)}`;
    const run = await finished(
      startHarness(
        [
          "run",
          "--script",
          file,
          "--workspace",
          workspace,
          "--session",
          id,
          "--shell",
          "allow",
          "--deny",
          "shell(curl*)",
          "do",
        ],
        { env: { ...childEnv(), HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") } },
      ),
    );
    expectExit(run, 0);
    const started = (await readJournal(workspace, id)).find((r) => r.type === "agent.started");
    expect(started?.data.grant).toMatchObject({ shell: "allow" });
    const base = ["policy", "explain", "shell", '{"command":"curl x"}', "--workspace", workspace];
    const explained = await harness([...base, "--session", id, "--agent", "net", "--json"]);
    expectExit(explained, 0);
    const body = JSON.parse(explained.stdout);
    expect(body).toMatchObject({
      decision: "deny",
      rule: "shell(curl*)",
      decided_by: "parent",
      decided_by_session: id,
    });
    expect(body.levels.map((l: { decision: string }) => l.decision)).toEqual(["deny", "deny"]);
    // A command the parent does not deny: the child's own grant (shell allow) decides.
    const ls = await harness([
      ...base.slice(0, 3),
      '{"command":"ls"}',
      ...base.slice(4),
      "--session",
      id,
      "--agent",
      "net",
      "--json",
    ]);
    expect(JSON.parse(ls.stdout)).toMatchObject({ decision: "allow", decided_by: "agent" });
    const human = await harness([...base, "--session", id, "--agent", "net"]);
    expectExit(human, 0);
    expect(human.stdout).toContain("shell: deny");
    expect(human.stdout).toContain(`decided by: parent session ${id}`);
    const unknown = await harness([...base, "--session", id, "--agent", "nope"]);
    expectExit(unknown, 64);
    expect(unknown.stderr).toContain('started no agent "nope" (it started: net)');
  }, 120_000);
});

describe("harness serve", () => {
  it("sends a sub-agent's records as transient agent/record notifications, tagged with its label", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const file = join(await tempDir("harness-agents-vis-"), "script.json");
    await writeFile(
      file,
      JSON.stringify({
        replies: [{ text: "", calls: [call("a1", "agent", { task: "t", label: "helper" })] }, { text: "ok" }],
        agents: { helper: { replies: [{ text: "helped" }] } },
      }),
    );
    const server = new StdioServer(
      serverEnv(await serverConfig(), { HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") }),
    );
    try {
      await server.call("initialize", { client: { name: "test", version: "1" }, protocol_version: 1 });
      const started = await server.call("session/start", {
        workspace,
        goal: "delegate",
        options: { script: file, write: true },
      });
      const session = started.result?.session as string;
      expect(session, JSON.stringify(started)).toBeTruthy();
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.session === session);
      const child = await readJournal(workspace, `${session}/helper`);
      const notes = server.notifications(session, "agent/record");
      expect(notes.map((m) => m.json.params?.agent)).toEqual(child.map(() => "helper"));
      expect(notes.map((m) => (m.json.params?.record as { hash?: string } | undefined)?.hash)).toEqual(
        child.map((r) => r.hash),
      );
      // Not durable: no seq of the parent's is spent on them.
      expect(notes.every((m) => m.json.params?.seq === undefined)).toBe(true);
    } finally {
      await server.close();
    }
  }, 60_000);
});
