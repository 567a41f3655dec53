import { existsSync } from "node:fs";
import { join } from "node:path";
import { threadId } from "node:worker_threads";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { verifyJournal } from "../../src/journal/verify.js";
import { liveGroupMembers } from "../../src/sandbox/proc.js";
import { SessionHub } from "../../src/server/hub.js";
import { LOCAL_IDENTITY } from "../../src/server/identities.js";
import type { Notification } from "../../src/server/notifications.js";
import { serveSessionFactory } from "../../src/server/session-factory.js";
import { type ThreadedSessionFactory, threadedSessionFactory } from "../../src/server/threaded-factory.js";
import { jsonScript, ofType, readJournal, removeTempDirs, workspaceWith } from "../e2e/helpers.js";
import { serverConfig } from "../e2e/serve-support.js";

/*
 * Sessions of `harness serve` on session threads (--session-threads): the threads run the compiled
 * thread program (dist/src/server/session-thread.js: `npm run build` first), the hub and the
 * factory run here, as in the server's main thread.
 */

let previousConfig: string | undefined;
beforeAll(async () => {
  // The threads copy this environment when they start: a config of the test's own.
  previousConfig = process.env.HARNESS_CONFIG;
  process.env.HARNESS_CONFIG = await serverConfig();
});
afterAll(async () => {
  if (previousConfig === undefined) delete process.env.HARNESS_CONFIG;
  else process.env.HARNESS_CONFIG = previousConfig;
  await removeTempDirs();
});

let open: { hub: SessionHub; factory: ThreadedSessionFactory }[] = [];
afterEach(async () => {
  for (const { hub, factory } of open) {
    await hub.shutdown();
    await factory.close();
  }
  open = [];
});

function server(threads: number) {
  const log: string[] = [];
  const local = serveSessionFactory({ log: (line) => log.push(line) });
  const factory = threadedSessionFactory({ threads, local, log: (line) => log.push(line) });
  const hub = new SessionHub({ factory, log: (line) => log.push(line) });
  open.push({ hub, factory });
  return { hub, factory, log };
}

/** Notifications of the sessions started with `sink`, and a wait for the first that passes a test. */
function listen() {
  const seen: Notification[] = [];
  const waiters: { test: (n: Notification) => boolean; resolve: (n: Notification) => void }[] = [];
  const sink = (notification: Notification) => {
    seen.push(notification);
    for (const waiter of waiters.splice(0)) {
      if (waiter.test(notification)) waiter.resolve(notification);
      else waiters.push(waiter);
    }
  };
  const waitFor = (test: (n: Notification) => boolean) =>
    new Promise<Notification>((resolve) => {
      const found = seen.find(test);
      if (found) resolve(found);
      else waiters.push({ test, resolve });
    });
  return { sink, seen, waitFor };
}

const params = (n: Notification) => n.params as Record<string, unknown>;
const completed = (session: string) => (n: Notification) =>
  n.method === "turn/completed" && params(n).session === session;

describe("session threads (serve --session-threads)", () => {
  it("runs two sessions on two threads, neither the server's own, each journaled as in-process", async () => {
    const { hub, factory } = server(2);
    const events = listen();
    const ids: string[] = [];
    for (const name of ["a", "b"]) {
      const workspace = await workspaceWith({ "notes.txt": `${name}\n` });
      const script = await jsonScript([
        {
          text: "",
          calls: [{ id: "w1", name: "write_file", arguments: { path: "out.txt", content: name } }],
        },
        { text: "done" },
      ]);
      const started = await hub.start(
        LOCAL_IDENTITY,
        { workspace, goal: `write ${name}`, options: { script, write: true } },
        events.sink,
      );
      ids.push(started.session);
      await events.waitFor(completed(started.session));
      const journal = await readJournal(workspace, started.session);
      expect(ofType(journal, "tool.result")).toHaveLength(1);
      expect(
        (await verifyJournal(join(workspace, ".harness/sessions", started.session, "events.jsonl"))).ok,
      ).toBe(true);
      // Every durable record reached the hub's subscriber once, in order.
      const seqs = events.seen
        .filter((n) => params(n).session === started.session && typeof params(n).seq === "number")
        .map((n) => params(n).seq);
      expect(seqs).toEqual(journal.map((r) => r.seq));
    }
    const threads = ids.map((id) => factory.threadOf(id));
    expect(threads[0]).toBeGreaterThan(0);
    expect(threads[1]).toBeGreaterThan(0);
    expect(threads[0]).not.toBe(threads[1]);
    expect(threads).not.toContain(threadId);
  }, 120_000);

  it("a thread that dies fails only its session, kills its processes, and the session can be opened again", async () => {
    const { hub, factory, log } = server(2);
    const events = listen();
    const doomedWs = await workspaceWith({});
    const doomedScript = await jsonScript([
      { text: "", calls: [{ id: "s1", name: "shell", arguments: { command: "sleep 60" } }] },
      { text: "slept" },
      { text: "resumed" },
    ]);
    const doomed = (
      await hub.start(
        LOCAL_IDENTITY,
        { workspace: doomedWs, goal: "sleep", options: { script: doomedScript, shell: true } },
        events.sink,
      )
    ).session;
    const spawned = await events.waitFor(
      (n) =>
        params(n).session === doomed && (params(n).record as { type?: string })?.type === "process.spawned",
    );
    const pgid = ((params(spawned).record as { data: { pgid: number } }).data.pgid as number) ?? 0;
    expect(pgid).toBeGreaterThan(0);
    expect(liveGroupMembers(pgid).length).toBeGreaterThan(0);

    // A second session, on the other thread, runs a turn that outlasts the crash.
    const otherWs = await workspaceWith({});
    const otherScript = await jsonScript([
      { text: "", calls: [{ id: "s1", name: "shell", arguments: { command: "sleep 1" } }] },
      { text: "done" },
    ]);
    const other = (
      await hub.start(
        LOCAL_IDENTITY,
        { workspace: otherWs, goal: "nap", options: { script: otherScript, shell: true } },
        events.sink,
      )
    ).session;
    expect(factory.threadOf(other)).not.toBe(factory.threadOf(doomed));

    await factory.killThreadOf(doomed);
    const lost = await events.waitFor(
      (n) => n.method === "session/status" && params(n).session === doomed && params(n).error !== undefined,
    );
    expect(String(params(lost).error)).toContain("thread stopped");
    expect(log.some((line) => line.includes(`session ${doomed}: its session thread stopped`))).toBe(true);
    // Its shell's process group is killed.
    await until(() => liveGroupMembers(pgid).length === 0);
    expect(liveGroupMembers(pgid)).toEqual([]);
    // Its writer lock (naming this process) is gone.
    expect(existsSync(join(doomedWs, ".harness/sessions", doomed, "writer.lock"))).toBe(false);

    // The other session finishes its turn.
    const otherEnd = await events.waitFor(completed(other));
    expect(params(otherEnd).status).toBe("finished");

    // The session opens again (on a live thread) and runs a turn; its journal is whole.
    const again = await hub.start(
      LOCAL_IDENTITY,
      {
        workspace: doomedWs,
        session: doomed,
        goal: "carry on",
        options: { script: doomedScript, shell: true },
      },
      events.sink,
    );
    expect(again.session).toBe(doomed);
    // The resumed session journals that the killed call's outcome is unknown, never a guess.
    const end = await events.waitFor(completed(doomed));
    expect(params(end)).toMatchObject({ status: "stopped", outcome: "review_required" });
    const journal = await readJournal(doomedWs, doomed);
    expect(ofType(journal, "session.resumed")).toHaveLength(1);
    expect(ofType(journal, "run.stopped").map((r) => r.data.reason)).toEqual(["unknown_outcome"]);
    expect((await verifyJournal(join(doomedWs, ".harness/sessions", doomed, "events.jsonl"))).ok).toBe(true);
  }, 120_000);
});

async function until(test: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !test(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
}
