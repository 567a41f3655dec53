import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { liveGroupMembers } from "../../src/sandbox/proc.js";
import { fixture, jsonScript, ofType, readJournal, removeTempDirs, workspaceWith } from "./helpers.js";
import { itemKind, StdioServer, serverConfig, serverEnv, type WireMessage } from "./serve-support.js";

afterAll(removeTempDirs);

const durableSeqs = (messages: WireMessage[]) =>
  messages.filter((m) => typeof m.json.params?.seq === "number").map((m) => m.json.params?.seq as number);

describe("harness serve --stdio", () => {
  it("runs a full turn: every journal record reaches the client once, as its notification, in order", async () => {
    const workspace = await workspaceWith({ "notes.txt": "draft\n" });
    const script = await jsonScript([
      { text: "reading", calls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }] },
      {
        text: "writing",
        calls: [{ id: "w1", name: "write_file", arguments: { path: "out.txt", content: "done\n" } }],
      },
      { text: "all done" },
    ]);
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      const init = await server.call("initialize", {
        client: { name: "test", version: "1" },
        protocol_version: 1,
      });
      expect(init.result).toMatchObject({
        protocol_version: 1,
        server: { name: "harness" },
        identity: "local",
      });
      const started = await server.call("session/start", {
        workspace,
        goal: "copy the notes",
        options: { script, write: true },
      });
      const session = started.result?.session as string;
      const end = await server.waitFor(
        (m) => m.json.method === "turn/completed" && m.json.params?.session === session,
      );
      expect(end.json.params).toMatchObject({
        turn: 1,
        status: "finished",
        outcome: "unverified",
      });
      expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe("done\n");

      const journal = await readJournal(workspace, session);
      const notes = server.notifications(session).filter((m) => typeof m.json.params?.seq === "number");
      expect(durableSeqs(notes)).toEqual(journal.map((r) => r.seq));
      expect(notes.map((m) => (m.json.params?.record as { hash?: string } | undefined)?.hash)).toEqual(
        journal.map((r) => r.hash),
      );
      const methods = notes.map((m) => m.json.method);
      // session.started, then the goal's user.input, which starts turn 1.
      expect(methods.slice(0, 2)).toEqual(["session/record", "turn/started"]);
      expect(methods.filter((m) => m === "turn/started")).toHaveLength(1);
      expect(methods.at(-1)).toBe("turn/completed");
      const tools = notes.filter((m) => m.json.method === "item/completed" && itemKind(m) === "tool");
      expect(tools.map((m) => m.json.params?.item)).toEqual([
        expect.objectContaining({ kind: "tool", id: "r1", tool: "read_file", status: "ok" }),
        expect.objectContaining({ kind: "tool", id: "w1", tool: "write_file", status: "ok" }),
      ]);
      const model = notes.find((m) => m.json.method === "item/completed" && itemKind(m) === "model");
      const modelStarted = journal.find((r) => r.type === "model.started");
      expect(model?.json.params?.item).toEqual({
        kind: "model",
        id: `model:${modelStarted?.seq}`,
        text: "reading",
        calls: [{ id: "r1", name: "read_file" }],
      });
      // Streamed text arrives as transient deltas without seq.
      expect(server.notifications(session, "item/delta").length).toBeGreaterThan(0);
      expect(server.notifications(session, "item/delta")[0]?.json.params?.seq).toBeUndefined();

      const read = await server.call("session/read", { session, from_seq: 2, limit: 3 });
      expect((read.result?.records as { seq: number }[] | undefined)?.map((r) => r.seq)).toEqual([2, 3, 4]);
      expect(read.result?.head).toEqual({ seq: journal.at(-1)?.seq, hash: journal.at(-1)?.hash });
      const verify = await server.call("session/verify", { session });
      expect(verify.result).toEqual({
        session,
        ok: true,
        records: journal.length,
        head_hash: journal.at(-1)?.hash,
        problems: [],
      });
      const listed = await server.call("session/list", { workspace });
      expect(listed.result?.sessions).toEqual([
        expect.objectContaining({
          session,
          identity: "local",
          status: "finished",
          goal: "copy the notes",
          last_seq: journal.at(-1)?.seq,
        }),
      ]);
    } finally {
      expect((await server.close()).code).toBe(0);
    }
  });

  it("asks over the wire: approval/requested, approval/respond decides it (by the identity), a second answer conflicts", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      { text: "", calls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "A\n" } }] },
      { text: "written" },
    ]);
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      const session = (
        await server.call("session/start", { workspace, goal: "write a", options: { script } })
      ).result?.session as string;
      const asked = await server.waitFor((m) => m.json.method === "approval/requested");
      const journal = await readJournal(workspace, session);
      const requested = ofType(journal, "approval.requested")[0];
      expect(asked.json.params).toMatchObject({
        session,
        approval_id: `${session}:${requested?.seq}`,
        call_id: "w1",
        tool: "write_file",
        arguments: { path: "a.txt", content: "A\n" },
      });
      await server.waitFor(
        (m) => m.json.method === "session/status" && m.json.params?.status === "awaiting_approval",
      );
      const pending = await server.call("approval/list", {});
      expect(
        (pending.result?.approvals as { approval_id: string }[] | undefined)?.map((a) => a.approval_id),
      ).toEqual([`${session}:${requested?.seq}`]);
      const id = asked.json.params?.approval_id as string;
      expect((await server.call("approval/respond", { approval_id: id, decision: "accept" })).result).toEqual(
        {},
      );
      const resolved = await server.waitFor((m) => m.json.method === "approval/resolved");
      expect(resolved.json.params).toMatchObject({
        approval_id: id,
        decision: "allow",
        scope: "once",
        by: "identity:local",
      });
      await server.waitFor((m) => m.json.method === "turn/completed");
      expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("A\n");
      const again = await server.call("approval/respond", { approval_id: id, decision: "decline" });
      expect(again.error?.code).toBe(-32003);
      const unknown = await server.call("approval/respond", {
        approval_id: `${session}:9999`,
        decision: "accept",
      });
      expect(unknown.error?.code).toBe(-32002);
    } finally {
      await server.close();
    }
  });

  it("denies an approval nobody answers within approval_timeout_ms, and the turn goes on", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      { text: "", calls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "A\n" } }] },
      { text: "could not write" },
    ]);
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      const session = (
        await server.call("session/start", {
          workspace,
          goal: "write a",
          options: { script, approval_timeout_ms: 300 },
        })
      ).result?.session as string;
      const end = await server.waitFor((m) => m.json.method === "turn/completed");
      expect(end.json.params?.status).toBe("finished");
      const decided = ofType(await readJournal(workspace, session), "approval.decided");
      expect(decided.map((r) => r.data)).toEqual([
        expect.objectContaining({ decision: "deny", by: "server", reason: "approval timed out" }),
      ]);
      const result = ofType(await readJournal(workspace, session), "tool.result")[0];
      expect(result?.data.status).toBe("denied");
    } finally {
      await server.close();
    }
  });

  it("answers malformed lines with the right error and keeps the connection (U+2028 stays inside its string)", async () => {
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      server.send("this is not json");
      expect((await server.waitFor((m) => m.json.error?.code === -32700)).json.id).toBeNull();
      server.send("[1, 2]");
      expect(
        (await server.waitFor((m) => m.json.error?.message.includes("batches are not supported") === true))
          .json.error?.code,
      ).toBe(-32600);
      server.send('"just a string"');
      await server.waitFor((m) => m.json.error?.code === -32600 && m.json.error.message.includes("object"));
      expect((await server.call("no/such/method")).error?.code).toBe(-32601);
      const bad = await server.call("session/read", { session: "x", surprise: true });
      expect(bad.error?.code).toBe(-32602);
      expect(bad.error?.data?.issues).toEqual([
        expect.objectContaining({ message: expect.stringContaining("surprise") }),
      ]);
      expect((await server.call("session/read", { session: "no-such-session" })).error?.code).toBe(-32002);
      // A goal holding U+2028 and U+2029: sent raw inside a JSON string, echoed back escaped.
      const workspace = await workspaceWith({});
      const goal = "line\u2028separator\u2029paragraph";
      const started = await server.call("session/start", {
        workspace,
        goal,
        options: { script: fixture("echo-goal.mjs") },
      });
      const session = started.result?.session as string;
      const turn = await server.waitFor(
        (m) => m.json.method === "turn/started" && m.json.params?.session === session,
      );
      expect(turn.line).not.toMatch(/[\u2028\u2029]/);
      expect(turn.line).toContain("\\u2028");
      expect(turn.json.params?.input).toBe(goal);
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.session === session);
      expect((await server.call("initialize")).result?.identity).toBe("local");
    } finally {
      expect((await server.close()).code).toBe(0);
    }
  });

  it("runs 50 sessions at once with no lost or duplicated event (seqs contiguous per session)", async () => {
    const script = await jsonScript([
      { text: "", calls: [{ id: "r1", name: "read_file", arguments: { path: "f.txt" } }] },
      { text: "read it" },
    ]);
    const workspaces = await Promise.all(
      Array.from({ length: 50 }, (_, i) => workspaceWith({ "f.txt": `file ${i}\n` })),
    );
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      const sessions = (
        await Promise.all(
          workspaces.map((workspace, i) =>
            server.call("session/start", { workspace, goal: `read ${i}`, options: { script } }),
          ),
        )
      ).map((response) => response.result?.session as string);
      expect(new Set(sessions).size).toBe(50);
      await Promise.all(
        sessions.map((session) =>
          server.waitFor(
            (m) => m.json.method === "turn/completed" && m.json.params?.session === session,
            120_000,
          ),
        ),
      );
      for (const [i, session] of sessions.entries()) {
        const journal = await readJournal(workspaces[i]!, session);
        expect(durableSeqs(server.notifications(session))).toEqual(journal.map((_, seq) => seq));
      }
    } finally {
      await server.close();
    }
  }, 180_000);

  it("on SIGTERM interrupts the running turn, journals turn.interrupted, leaves no process and exits 0", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      { text: "", calls: [{ id: "s1", name: "shell", arguments: { command: "sleep 60" } }] },
      { text: "slept" },
    ]);
    const server = new StdioServer(serverEnv(await serverConfig()));
    const session = (
      await server.call("session/start", { workspace, goal: "sleep", options: { script, shell: true } })
    ).result?.session as string;
    await server.waitFor((m) => m.json.method === "item/started" && itemKind(m) === "tool");
    // The shell's process group exists once process.spawned is journaled.
    await server.waitFor(
      (m) => (m.json.params?.record as { type?: string } | undefined)?.type === "process.spawned",
    );
    server.child.kill("SIGTERM");
    const exit = await server.exited;
    expect(exit.code).toBe(0);
    const journal = await readJournal(workspace, session);
    expect(ofType(journal, "turn.interrupted")).toHaveLength(1);
    const spawned = ofType(journal, "process.spawned")[0];
    const pgid = spawned?.data.pgid as number;
    // No member of the shell's group is left running. (A member already killed can still be a
    // zombie for a moment, waiting for init to reap it: `kill(-pgid, 0)` would count that.)
    expect(pgid).toBeGreaterThan(0);
    expect(liveGroupMembers(pgid)).toEqual([]);
  }, 60_000);

  it("turns over the wire: a second turn, a turn already running conflicts, steer, interrupt, fork and compact", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      { text: "first" },
      { text: "", calls: [{ id: "s1", name: "shell", arguments: { command: "sleep 2" } }] },
      { text: "after the steer" },
      { text: "", calls: [{ id: "s2", name: "shell", arguments: { command: "sleep 60" } }] },
    ]);
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      const session = (await server.call("session/start", { workspace, options: { script, shell: true } }))
        .result?.session as string;
      expect((await server.call("turn/start", { session, input: "say hi" })).result).toEqual({
        session,
        turn: 1,
      });
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.turn === 1);
      expect((await server.call("turn/start", { session, input: "sleep a bit" })).result).toEqual({
        session,
        turn: 2,
      });
      await server.waitFor((m) => m.json.method === "item/started" && itemKind(m) === "tool");
      expect((await server.call("turn/start", { session, input: "again" })).error?.code).toBe(-32003);
      expect((await server.call("turn/steer", { session, input: "also say bye" })).result).toEqual({});
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.turn === 2);
      const journal = await readJournal(workspace, session);
      expect(ofType(journal, "user.steered").map((r) => r.data.text)).toEqual(["also say bye"]);
      expect(ofType(journal, "steer.delivered")).toHaveLength(1);

      await server.call("turn/start", { session, input: "sleep long" });
      await server.waitFor(
        (m) =>
          (m.json.params?.record as { type?: string } | undefined)?.type === "process.spawned" &&
          m.json.params?.session === session,
      );
      expect((await server.call("turn/interrupt", { session })).result).toEqual({});
      const interrupted = await server.waitFor(
        (m) => m.json.method === "turn/completed" && m.json.params?.turn === 3,
      );
      expect(interrupted.json.params?.status).toBe("interrupted");

      const fork = await server.call("session/fork", { session });
      const child = fork.result?.session as string;
      expect(child).not.toBe(session);
      const childRecords = (await server.call("session/read", { session: child })).result?.records as {
        type: string;
      }[];
      expect(childRecords.some((r) => r.type === "session.forked")).toBe(true);

      const compacted = await server.call("session/compact", { session, instructions: "keep it short" });
      const summaries = ofType(await readJournal(workspace, session), "context.compacted");
      expect(summaries).toHaveLength(1);
      expect(compacted.result).toEqual({ summary: summaries[0]?.data.summary });
      expect(String(summaries[0]?.data.summary).length).toBeGreaterThan(0);
    } finally {
      expect((await server.close()).code).toBe(0);
    }
  }, 60_000);
});
