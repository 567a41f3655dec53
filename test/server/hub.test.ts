import { afterEach, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/api/errors.js";
import type { EngineListener } from "../../src/engine/options.js";
import { SessionHub } from "../../src/server/hub.js";
import { type Identity, LOCAL_IDENTITY } from "../../src/server/identities.js";
import { type Notification, replay } from "../../src/server/notifications.js";
import type { SessionFactory } from "../../src/server/ports.js";
import { engineFor, tempWorkspace, type Workspace } from "../support/session.js";

const write = (id: string, path: string) => ({
  text: "",
  calls: [{ id, name: "write_file", arguments: { path, content: "x\n" } }],
});

let workspaces: Workspace[] = [];
afterEach(async () => {
  for (const ws of workspaces) await ws.cleanup();
  workspaces = [];
});

/** A hub whose sessions run the test engine (scripted turns, write: ask) in one temp workspace. */
async function hubWith(turns: unknown[], existing?: Workspace) {
  const ws = existing ?? (await tempWorkspace());
  if (existing === undefined) workspaces.push(ws);
  let counter = 0;
  const factory: SessionFactory = {
    async open(request) {
      const sessionId = request.sessionId ?? `s${++counter}`;
      const approver = request.approver(sessionId);
      return {
        sessionId,
        workspace: ws.root,
        store: ws.store,
        records: [],
        turn: (input: string, listener: EngineListener) =>
          engineFor(ws, {
            session: sessionId,
            goal: input,
            turns,
            write: "ask",
            approver,
            extra: {
              listener,
              setup: { identity: request.identity.name },
            },
          }),
        compact: () => {
          throw new Error("not in this test");
        },
        close: async () => {},
      };
    },
    async store() {
      return {
        store: ws.store,
        workspace: ws.root,
        verify: async () => ({ ok: true, records: 0, problems: [], head: null }),
        fork: async () => "fork",
      };
    },
    async served() {
      return [];
    },
  };
  const hub = new SessionHub({ factory, log: () => {} });
  return { hub, ws };
}

function until(test: () => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = () => {
      if (test()) return resolve();
      if (Date.now() - started > 10_000) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(poll, 5);
    };
    poll();
  });
}

describe("SessionHub", () => {
  it("sends each durable record once, live exactly as a replay of the journal, and takes an approval over the wire", async () => {
    const { hub, ws } = await hubWith([write("w1", "a.txt"), { text: "done" }]);
    const live: { notification: Notification; durable: boolean }[] = [];
    const { session } = await hub.start(
      LOCAL_IDENTITY,
      { workspace: ws.root, goal: "write a" },
      (notification, durable) => live.push({ notification, durable }),
    );
    await until(() => hub.approvals(LOCAL_IDENTITY, session).approvals.length === 1, "the approval");
    const [pending] = hub.approvals(LOCAL_IDENTITY, session).approvals;
    const requested = live.find((item) => item.notification.method === "approval/requested");
    // approval/list shows the approval/requested notification's own params.
    expect(pending).toEqual(requested?.notification.params);
    expect(
      live.some(
        (item) =>
          item.notification.method === "session/status" &&
          item.notification.params.status === "awaiting_approval",
      ),
    ).toBe(true);
    hub.respond({ name: "alice", policy: { see_all: true } }, String(pending?.approval_id), "accept");
    await until(() => live.some((item) => item.notification.method === "turn/completed"), "the turn's end");
    expect(() => hub.respond(LOCAL_IDENTITY, String(pending?.approval_id), "accept")).toThrow(
      expect.objectContaining({ code: ErrorCode.Conflict }),
    );

    const records = await ws.journal(session);
    const decided = records.find((record) => record.type === "approval.decided");
    expect(decided?.data).toMatchObject({ decision: "allow", scope: "once", by: "identity:alice" });
    const durable = live.filter((item) => item.durable).map((item) => JSON.stringify(item.notification));
    expect(durable).toEqual(replay(session, records, 0).map((notification) => JSON.stringify(notification)));
    expect(durable.map((text) => JSON.parse(text).params.seq)).toEqual(records.map((record) => record.seq));
    expect(replay(session, records, 0).filter((n) => n.method === "turn/started")).toHaveLength(1);
  });

  it("a subscriber joining mid-session gets the replay then the live records, none twice or missing", async () => {
    const { hub, ws } = await hubWith([write("w1", "a.txt"), { text: "done" }]);
    const { session } = await hub.start(LOCAL_IDENTITY, { workspace: ws.root, goal: "write a" });
    await until(() => hub.approvals(LOCAL_IDENTITY, session).approvals.length === 1, "the approval");
    const seen: number[] = [];
    await hub.subscribe(LOCAL_IDENTITY, session, 2, (notification, durable) => {
      if (durable) seen.push(notification.params.seq as number);
    });
    hub.respond(
      LOCAL_IDENTITY,
      String(hub.approvals(LOCAL_IDENTITY, session).approvals[0]?.approval_id),
      "decline",
    );
    await until(() => hub.running === 0, "the turn's end");
    const records = await ws.journal(session);
    expect(seen).toEqual(records.filter((record) => record.seq >= 2).map((record) => record.seq));
  });

  it("hides another identity's sessions as not found, and shutdown interrupts a turn waiting for approval", async () => {
    const { hub, ws } = await hubWith([write("w1", "a.txt"), { text: "done" }]);
    const bob: Identity = { name: "bob", policy: { workspaces: [ws.root] } };
    const alice: Identity = { name: "alice", policy: {} };
    const { session } = await hub.start(bob, { workspace: ws.root, goal: "write a" });
    await until(() => hub.approvals(bob, session).approvals.length === 1, "the approval");
    expect(hub.approvals(alice, undefined).approvals).toEqual([]);
    await expect(hub.read(alice, { session })).rejects.toMatchObject({ code: ErrorCode.NotFound });
    await expect(hub.startTurn(alice, { session, input: "x" })).rejects.toMatchObject({
      code: ErrorCode.NotFound,
      data: { code: "SESSION_NOT_FOUND" },
    });
    expect(() =>
      hub.respond(alice, String(hub.approvals(bob, session).approvals[0]?.approval_id), "accept"),
    ).toThrow(expect.objectContaining({ code: ErrorCode.NotFound }));
    expect((await hub.list(alice, {})).sessions).toEqual([]);
    expect((await hub.list(bob, {})).sessions).toEqual([
      expect.objectContaining({ session, identity: "bob", status: "awaiting_approval" }),
    ]);

    await hub.shutdown();
    const records = await ws.journal(session);
    expect(records.find((record) => record.type === "approval.decided")?.data).toMatchObject({
      decision: "deny",
      by: "server",
      reason: "the turn was interrupted",
    });
    expect(records.at(-1)?.type).toBe("turn.interrupted");
  });

  it("turn/start on a recorded session this hub does not host names the session/start to call; others may not learn of it", async () => {
    const first = await hubWith([{ text: "done" }]);
    const { session } = await first.hub.start(LOCAL_IDENTITY, { workspace: first.ws.root, goal: "say done" });
    await until(() => first.hub.running === 0, "the first turn's end");
    await first.hub.shutdown();
    const before = (await first.ws.journal(session)).length;

    const { hub, ws } = await hubWith([{ text: "again" }], first.ws);
    const start = { workspace: ws.root, session };
    for (const call of [
      () => hub.startTurn(LOCAL_IDENTITY, { session, input: "next" }),
      () => hub.steer(LOCAL_IDENTITY, { session, input: "next" }),
      () => hub.interrupt(LOCAL_IDENTITY, { session }),
      () => hub.compact(LOCAL_IDENTITY, { session }),
    ]) {
      await expect(call()).rejects.toMatchObject({
        code: ErrorCode.NotFound,
        message: expect.stringContaining(`call session/start ${JSON.stringify(start)}`),
        data: { code: "SESSION_NOT_OPEN", ...start, call: { method: "session/start", params: start } },
      });
    }
    // Another identity that may not see it: the same answer as for no session at all.
    const alice: Identity = { name: "alice", policy: { workspaces: [ws.root] } };
    const hidden = await hub.startTurn(alice, { session, input: "x" }).catch((error: unknown) => error);
    const none = await hub.startTurn(alice, { session: "nothing-here", input: "x" }).catch((e: unknown) => e);
    expect(hidden).toMatchObject({ code: ErrorCode.NotFound, data: { code: "SESSION_NOT_FOUND" } });
    expect((hidden as Error).message).toBe((none as Error).message.replaceAll("nothing-here", session));
    // One that may see it but not use its workspace is told that, not where to call.
    const auditor: Identity = { name: "auditor", policy: { see_all: true, workspaces: [] } };
    await expect(hub.startTurn(auditor, { session, input: "x" })).rejects.toMatchObject({
      code: ErrorCode.Forbidden,
      data: { code: "IDENTITY_FORBIDDEN" },
    });
    expect(await ws.journal(session)).toHaveLength(before);
  });
});
