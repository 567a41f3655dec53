import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, eventually, processesWith } from "../support/processes.js";
import { ensureBuilt, expectExit, fixture, readJournal, removeTempDirs, workspaceWith } from "./helpers.js";
import { type HttpServe, startHttpServe, TOKEN } from "./mcp-http-2025-client.js";
import { factsOf, textOf } from "./mcp-serve-client.js";

/**
 * `harness mcp serve --http` driven by the official 1.x TypeScript SDK client (what most MCP
 * hosts of the 2025 generation ship): its Streamable HTTP transport keeps the session the server
 * issues, answers elicitation on the call's stream, cancels with notifications/cancelled when
 * the caller aborts, and reports progress to the caller.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

interface Sdk1 {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** What the server asked by elicitation, in order. */
  elicitations: string[];
  /** One per tools/call POST, in order: settles when the server ends that response's stream. */
  callStreamsEnded: Promise<void>[];
}

/** A 1.x SDK client connected to the server, declaring elicitation when it has an answer. */
async function connect1x(serve: HttpServe, answer?: () => ElicitResult): Promise<Sdk1> {
  const client = new Client(
    { name: "sdk1-e2e", version: "1" },
    { capabilities: answer ? { elicitation: { form: {} } } : {} },
  );
  const elicitations: string[] = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicitations.push(String(request.params.message));
      return answer();
    });
  }
  const callStreamsEnded: Promise<void>[] = [];
  const transport = new StreamableHTTPClientTransport(new URL(serve.url), {
    requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    // The SDK's own fetch, watched: when does the server end a call's response stream?
    fetch: (url, init) => {
      const answer = fetch(url, init);
      const sent = typeof init?.body === "string" ? init.body : "";
      if (init?.method !== "POST" || !sent.includes('"method":"tools/call"')) return answer;
      let ended!: () => void;
      callStreamsEnded.push(
        new Promise<void>((resolve) => {
          ended = resolve;
        }),
      );
      return answer.then((response) => {
        if (!response.body) {
          ended();
          return response;
        }
        const body = response.body.pipeThrough(new TransformStream({ flush: () => ended() }));
        return new Response(body, { status: response.status, headers: response.headers });
      });
    },
  });
  await client.connect(transport);
  return { client, transport, elicitations, callStreamsEnded };
}

describe("harness mcp serve --http with the official 1.x SDK client", () => {
  it("asks by elicitation: an approved write lands byte for byte, a declined one writes nothing and says denied", async () => {
    const workspace = await workspaceWith({});
    const serve = await startHttpServe(["-w", workspace, "--write", "ask"]);
    try {
      const yes = await connect1x(serve, () => ({ action: "accept", content: { approve: true } }));
      expect(yes.transport.sessionId).toBeTruthy();
      const approved = await yes.client.callTool({
        name: "write_file",
        arguments: { path: "yes.txt", content: "approved \u00e9\n" },
      });
      expect(yes.elicitations).toHaveLength(1);
      expect(yes.elicitations[0]).toContain("yes.txt");
      expect(factsOf(approved).status).toBe("ok");
      expect(await readFile(join(workspace, "yes.txt"), "utf8")).toBe("approved \u00e9\n");
      const journal = await readJournal(workspace, factsOf(approved).session);
      expect(
        journal.filter((r) => r.type === "approval.decided").map((r) => [r.data.decision, r.data.by]),
      ).toEqual([["allow", "mcp-client"]]);

      const no = await connect1x(serve, () => ({ action: "decline" }));
      const declined = await no.client.callTool({
        name: "write_file",
        arguments: { path: "no.txt", content: "declined\n" },
      });
      expect(no.elicitations).toHaveLength(1);
      expect(declined.isError).toBe(true);
      expect(factsOf(declined)).toMatchObject({ status: "denied", error_type: "USER_DENIED" });
      expect(textOf(declined)).toMatch(/denied/i);
      expect(existsSync(join(workspace, "no.txt"))).toBe(false);
      expect(factsOf(declined).session).not.toBe(factsOf(approved).session);

      // terminateSession() is the SDK's DELETE: it is answered once the session has ended.
      await yes.transport.terminateSession();
      await no.transport.terminateSession();
      for (const ended of [factsOf(approved).session, factsOf(declined).session]) {
        expect((await readJournal(workspace, ended)).at(-1)?.type, ended).toMatch(/^run\./);
      }
      await yes.client.close();
      await no.client.close();
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("a client that declared no elicitation is not asked, and the call is denied", async () => {
    const workspace = await workspaceWith({});
    const serve = await startHttpServe(["-w", workspace, "--write", "ask"]);
    try {
      const mute = await connect1x(serve);
      const result = await mute.client.callTool({
        name: "write_file",
        arguments: { path: "mute.txt", content: "x\n" },
      });
      expect(factsOf(result).status).toBe("denied");
      expect(textOf(result)).toContain("declared no elicitation capability");
      expect(existsSync(join(workspace, "mute.txt"))).toBe(false);
      await mute.client.close();
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("stops a call the client aborts: cancelled in the journal, its processes gone, its late write never made", async () => {
    const workspace = await workspaceWith({});
    const serve = await startHttpServe(["-w", workspace, "--shell", "allow"]);
    const marker = "23.4567";
    try {
      const sdk = await connect1x(serve);
      const abort = new AbortController();
      const call = sdk.client.callTool(
        {
          name: "shell",
          arguments: { command: `echo started > started.txt; sleep ${marker}; echo late > late.txt` },
        },
        undefined,
        { signal: abort.signal },
      );
      const outcome = call.then(
        () => "answered",
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
      expect(await eventually(() => existsSync(join(workspace, "started.txt")), 30_000)).toBe(true);
      expect(processesWith(marker).length).toBeGreaterThan(0);
      abort.abort("the user pressed stop");
      // The SDK rejects the call at once and sends notifications/cancelled to the server.
      expect(await outcome).not.toBe("answered");

      // The server's session records the call's end: wait for it (bounded), then look.
      const sessionId = await servedSession(serve);
      let cancelled: Record<string, unknown> | undefined;
      expect(
        await eventually(async () => {
          const records = await readJournal(workspace, sessionId);
          cancelled = records.find((r) => r.type === "tool.result" && r.data.name === "shell")?.data;
          return cancelled !== undefined;
        }, 20_000),
      ).toBe(true);
      expect(cancelled).toMatchObject({ name: "shell", status: "cancelled" });
      const records = await readJournal(workspace, sessionId);
      const spawned = records
        .filter((r) => r.type === "process.spawned" && r.data.call_id === cancelled?.call_id)
        .map((r) => r.data.pid as number);
      expect(spawned.length).toBeGreaterThan(0);
      for (const pid of spawned) expect(alive(pid)).toBe(false);
      expect(processesWith(marker)).toEqual([]);
      expect(existsSync(join(workspace, "late.txt"))).toBe(false);
      // The cancelled call gets no response, and its stream is not left open on the client.
      expect(sdk.callStreamsEnded).toHaveLength(1);
      expect(await settlesWithin(sdk.callStreamsEnded[0]!, 10_000)).toBe(true);

      // The session goes on: the next call runs in it.
      const next = await sdk.client.callTool({ name: "shell", arguments: { command: "echo next" } });
      expect(factsOf(next)).toMatchObject({ status: "ok", session: sessionId });
      await sdk.client.close();
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("lists as resources only the journals of this client's own session", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const serve = await startHttpServe(["-w", workspace]);
    try {
      const alice = await connect1x(serve);
      const bob = await connect1x(serve);
      const aliceSession = factsOf(
        await alice.client.callTool({ name: "read_file", arguments: { path: "a.txt" } }),
      ).session;
      const bobSession = factsOf(
        await bob.client.callTool({ name: "read_file", arguments: { path: "a.txt" } }),
      ).session;
      const uri = (id: string) => `harness://sessions/${id}/events.jsonl`;
      expect((await alice.client.listResources()).resources.map((r) => r.uri)).toEqual([uri(aliceSession)]);
      expect((await bob.client.listResources()).resources.map((r) => r.uri)).toEqual([uri(bobSession)]);
      const own = await alice.client.readResource({ uri: uri(aliceSession) });
      expect(JSON.stringify(own.contents)).toContain("session.started");
      await expect(alice.client.readResource({ uri: uri(bobSession) })).rejects.toThrow();
      await alice.client.close();
      await bob.client.close();
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("a client that closes without DELETE has left: its session ends at the idle time and its place is free", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const serve = await startHttpServe([
      "-w",
      workspace,
      "--max-clients",
      "1",
      "--client-idle-timeout",
      "1000",
    ]);
    try {
      const first = await connect1x(serve);
      const session = factsOf(
        await first.client.callTool({ name: "read_file", arguments: { path: "a.txt" } }),
      ).session;
      // The SDK's close() drops its connections (the event stream it keeps open included) and
      // sends no DELETE. An idle event stream says nothing for up to 15 s (its keep-alive), so
      // the session must be seen as idle from the moment the client's connections are gone.
      await first.client.close();
      expect(await eventually(() => serve.stderr().includes(`session ${session} ended`), 8_000)).toBe(true);
      expect((await readJournal(workspace, session)).at(-1)?.type).toMatch(/^run\./);
      const second = await connect1x(serve);
      const read = await second.client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      expect(factsOf(read).session).not.toBe(session);
      await second.client.close();
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("reports harness_run's progress to the caller's onprogress while the run goes", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const serve = await startHttpServe([
      "-w",
      workspace,
      "--write",
      "allow",
      "--allow",
      "shell(grep *)",
      "--script",
      fixture("read-edit.mjs"),
    ]);
    try {
      const sdk = await connect1x(serve);
      const progress: { progress: number; message?: string | undefined }[] = [];
      const result = await sdk.client.callTool(
        {
          name: "harness_run",
          arguments: { goal: "mark the notes final", accept: ["grep -q 'status: final' notes.txt"] },
        },
        undefined,
        { onprogress: (p) => progress.push(p) },
      );
      expect(result.isError).toBeFalsy();
      expect((result.structuredContent as { status: string }).status).toBe("verified");
      expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: final\n");
      expect(progress.map((p) => p.message ?? "")).toEqual(
        expect.arrayContaining(["read_file: ok", "edit_file: ok", "acceptance passed"]),
      );
      const counts = progress.map((p) => p.progress);
      expect([...counts].sort((a, b) => a - b)).toEqual(counts);
      await sdk.client.close();
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });
});

/** The session id the server opened for the (only) client, from its log line. */
async function servedSession(serve: HttpServe): Promise<string> {
  const pattern = /a client session started session (\S+)/;
  expect(await eventually(() => pattern.test(serve.stderr()), 10_000)).toBe(true);
  return pattern.exec(serve.stderr())![1]!;
}

/** Whether `promise` settles within `ms` (a bound on a wait, not a delay). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
