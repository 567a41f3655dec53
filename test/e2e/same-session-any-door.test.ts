import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import { createSession } from "../../src/session/create.js";
import { startPool } from "../fleet/support.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonSummary,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  tempDir,
} from "./helpers.js";
import { connectServe, serveEnv } from "./mcp-serve-client.js";
import { StdioServer } from "./serve-support.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/**
 * One configuration, started through each of the five doors: what session.started records about
 * how the session was set up (policy, tools, options, environment, sandbox) must not depend on
 * the door. Each door gets its own copy of the same workspace, under the same directory name.
 */
const GOAL = "write hello.txt";
const ACCEPT = "test -f hello.txt";
const ALLOW = "shell(test -f hello.txt)";
const DENY = "shell(rm *)";
/** Write the file, check it with the command the allow rule lets run, try one the deny rule refuses. */
const REPLIES = [
  {
    text: "writing",
    calls: [{ id: "w1", name: "write_file", arguments: { path: "hello.txt", content: "hi\n" } }],
  },
  { text: "checking", calls: [{ id: "s1", name: "shell", arguments: { command: "test -f hello.txt" } }] },
  { text: "cleaning", calls: [{ id: "s2", name: "shell", arguments: { command: "rm README.md" } }] },
  { text: "hello.txt written" },
];

/** The run command's flags for the configuration (harness run, mcp serve, queue submit). */
const FLAGS = ["--write", "allow", "--shell", "deny", "--allow", ALLOW, "--deny", DENY];

interface Started {
  door: string;
  header: Record<string, unknown>;
  /** Every record's type and data, in order. */
  records: { type: string; data: Record<string, unknown> }[];
}

async function workspaceCopy(): Promise<string> {
  const root = join(await tempDir("harness-door-"), "project");
  await mkdir(root);
  await writeFile(join(root, "README.md"), "a project\n");
  return root;
}

function started(door: string, records: { type: string; data: Record<string, unknown> }[]): Started {
  const header = records.find((record) => record.type === "session.started");
  if (!header) throw new Error(`${door}: no session.started record`);
  return { door, header: header.data, records };
}

async function onlySession(workspace: string, door: string): Promise<Started> {
  const ids = sessionIds(workspace);
  const found: Started[] = [];
  for (const id of ids) {
    const one = started(door, await readJournal(workspace, id));
    if (one.header.goal === GOAL) found.push(one);
  }
  if (found.length !== 1) throw new Error(`${door}: expected one session with the goal, got ${found.length}`);
  return found[0]!;
}

async function viaRun(script: string, env: NodeJS.ProcessEnv): Promise<Started> {
  const workspace = await workspaceCopy();
  const result = await finished(
    startHarness(
      ["run", "--workspace", workspace, "--script", script, ...FLAGS, "--accept", ACCEPT, "--json", GOAL],
      { env },
    ),
  );
  expectExit(result, 0);
  expect(jsonSummary(result).status).toBe("verified");
  return onlySession(workspace, "run");
}

async function viaServer(script: string, env: NodeJS.ProcessEnv): Promise<Started> {
  const workspace = await workspaceCopy();
  const server = new StdioServer(env);
  try {
    await server.call("initialize", { client: { name: "doors", version: "1" }, protocol_version: 1 });
    const start = await server.call("session/start", {
      workspace,
      goal: GOAL,
      options: { script, write: "allow", shell: "deny", allow: [ALLOW], deny: [DENY], accept: [ACCEPT] },
    });
    const session = start.result?.session as string;
    if (session === undefined) throw new Error(`session/start failed: ${JSON.stringify(start)}`);
    const end = await server.waitFor(
      (m) => m.json.method === "turn/completed" && m.json.params?.session === session,
    );
    expect(end.json.params).toMatchObject({ status: "finished", outcome: "verified" });
  } finally {
    await server.close();
  }
  return onlySession(workspace, "server");
}

async function viaMcpServe(script: string): Promise<Started> {
  const workspace = await workspaceCopy();
  const served = await connectServe(["--workspace", workspace, "--script", script, ...FLAGS]);
  try {
    const result = await served.client.callTool({
      name: "harness_run",
      arguments: { goal: GOAL, accept: [ACCEPT] },
    });
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    expect((result.structuredContent as { status: string }).status).toBe("verified");
  } finally {
    await served.close();
  }
  return onlySession(workspace, "mcp serve");
}

async function viaWorker(script: string, env: NodeJS.ProcessEnv): Promise<Started> {
  const workspace = await workspaceCopy();
  const pool = await startPool();
  try {
    const submitted = await harness([
      "queue",
      "submit",
      "--database",
      pool.schema.url,
      "--session",
      "door-worker",
      "--workspace",
      workspace,
      "--script",
      script,
      ...FLAGS,
      "--accept",
      ACCEPT,
      GOAL,
    ]);
    expectExit(submitted, 0);
    pool.startWorker({ env: { HARNESS_CONFIG: env.HARNESS_CONFIG ?? "" } });
    const rows = await pool.waitUntil((all) => all.length === 1 && all[0]?.state === "done", 30_000);
    expect(rows[0]).toMatchObject({ status: "verified" });
    const records = await new PgJournalStore(pool.schema.pool).read("door-worker");
    return started(
      "worker",
      records.map((record) => ({ type: record.type, data: record.data as Record<string, unknown> })),
    );
  } finally {
    await pool.close();
  }
}

async function viaLibrary(script: string, env: NodeJS.ProcessEnv): Promise<Started> {
  const workspace = await workspaceCopy();
  const session = await createSession(
    { script, write: "allow", shell: "deny", allow: [ALLOW], deny: [DENY], accept: [ACCEPT] },
    { workspace, env },
  );
  try {
    const summary = await session.turn(GOAL).done;
    expect(summary.status).toBe("verified");
  } finally {
    await session.close();
  }
  return onlySession(workspace, "library");
}

/** What must be the same whichever door started the session. */
function setupOf({ header, records }: Started) {
  const { identity: _owner, ...options } = (header.options ?? {}) as Record<string, unknown>;
  return {
    workspace: (header.workspace as { name: string }).name,
    policy: header.policy,
    policy_digest: header.policy_digest,
    provider: header.provider,
    tools: header.tools,
    tools_digest: header.tools_digest,
    acceptance: header.acceptance,
    options,
    environment: header.environment,
    // How each call was decided, and the sandbox profile each process ran in (the shell's, the acceptance's).
    calls: records
      .filter((record) => record.type === "tool.result")
      .map((record) => ({ call: record.data.call_id, status: record.data.status })),
    processes: records
      .filter((record) => record.type === "process.spawned")
      .map((record) => ({
        call: record.data.call_id,
        purpose: record.data.purpose,
        sandbox: record.data.sandbox_profile,
        env: record.data.env_names,
      })),
    checks: records
      .filter((record) => record.type === "acceptance.checked")
      .flatMap((record) => record.data.checks as Record<string, unknown>[])
      .map((check) => ({
        name: check.name,
        passed: check.passed,
        purpose: check.purpose,
        sandbox: check.sandbox_profile,
        env: check.env_names,
      })),
  };
}

describe("same session, any door", () => {
  it("harness run, serve, mcp serve, a fleet worker and createSession record the same setup", async () => {
    const script = join(await tempDir("harness-door-script-"), "hello.json");
    await writeFile(script, JSON.stringify({ replies: REPLIES }));
    const env = await serveEnv();
    const doors = [
      await viaRun(script, env),
      await viaServer(script, env),
      await viaMcpServe(script),
      await viaWorker(script, env),
      await viaLibrary(script, env),
    ];
    for (const door of doors) {
      expect(door.records.at(-1)).toMatchObject({ type: "run.finished", data: { status: "verified" } });
    }
    // Only the server records who owns a session (its identity), for ownership across restarts.
    expect(doors.map((door) => (door.header.options as { identity?: unknown }).identity)).toEqual([
      undefined,
      "local",
      undefined,
      undefined,
      undefined,
    ]);
    const [reference, ...others] = doors.map((door) => ({ door: door.door, setup: setupOf(door) }));
    for (const other of others)
      expect({ door: other.door, setup: other.setup }).toEqual({
        door: other.door,
        setup: reference!.setup,
      });
    expect(reference!.setup.options).toEqual({
      write: "allow",
      shell: "deny",
      agents: { depth: 1, concurrent: 4, max: 16 },
      allow: [ALLOW],
      deny: [DENY],
      defaults: {},
    });
    // What is compared is what happened: the allow rule let the check run, the deny rule refused rm.
    expect(reference!.setup.calls).toEqual([
      { call: "w1", status: "ok" },
      { call: "s1", status: "ok" },
      { call: "s2", status: "denied" },
    ]);
    expect(reference!.setup.processes).toMatchObject([{ call: "s1", purpose: "shell" }]);
    expect(reference!.setup.checks).toMatchObject([{ name: ACCEPT, passed: true, purpose: "acceptance" }]);
  }, 120_000);
});

describe("session/start's write modes", () => {
  const WRITE = [
    { text: "", calls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "A\n" } }] },
    { text: "done" },
  ];

  async function startWith(server: StdioServer, workspace: string, options: Record<string, unknown>) {
    const script = join(await tempDir("harness-door-script-"), "write.json");
    await writeFile(script, JSON.stringify({ replies: WRITE }));
    return server.call("session/start", { workspace, goal: "write a", options: { script, ...options } });
  }

  it('write "ask" asks before a write, answered over the wire; "propose" records a proposal; a bogus mode writes nothing', async () => {
    const server = new StdioServer(await serveEnv());
    try {
      const asking = await workspaceCopy();
      const started = await startWith(server, asking, { write: "ask", shell: "deny" });
      const session = started.result?.session as string;
      const asked = await server.waitFor(
        (m) => m.json.method === "approval/requested" && m.json.params?.session === session,
      );
      expect(asked.json.params).toMatchObject({ call_id: "w1", tool: "write_file" });
      expect(existsSync(join(asking, "a.txt"))).toBe(false);
      const id = asked.json.params?.approval_id as string;
      expect((await server.call("approval/respond", { approval_id: id, decision: "accept" })).result).toEqual(
        {},
      );
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.session === session);
      expect(await readFile(join(asking, "a.txt"), "utf8")).toBe("A\n");
      const records = await readJournal(asking, session);
      const header = records[0]!.data;
      expect(header.options).toEqual({
        write: "ask",
        shell: "deny",
        agents: { depth: 1, concurrent: 4, max: 16 },
        defaults: {},
        identity: "local",
      });
      expect((header.policy as { write: unknown }).write).toEqual({ mode: "ask", source: "cli" });
      expect(records.filter((r) => r.type === "approval.requested").map((r) => r.data.call_id)).toEqual([
        "w1",
      ]);

      const proposing = await workspaceCopy();
      const proposed = await startWith(server, proposing, { write: "propose", shell: "deny" });
      const other = proposed.result?.session as string;
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.session === other);
      expect(existsSync(join(proposing, "a.txt"))).toBe(false);
      const held = await readJournal(proposing, other);
      expect(held[0]!.data.options).toMatchObject({ write: "propose" });
      expect((held[0]!.data.policy as { write: unknown }).write).toEqual({ mode: "propose", source: "cli" });
      expect(held.filter((r) => r.type === "proposal.recorded").map((r) => r.data.call_id)).toEqual(["w1"]);
      expect(held.some((r) => r.type === "approval.requested")).toBe(false);

      const refused = await workspaceCopy();
      const bogus = await startWith(server, refused, { write: "bogus" });
      expect(bogus.error?.code).toBe(-32602);
      expect(bogus.result).toBeUndefined();
      expect(existsSync(join(refused, ".harness"))).toBe(false);
    } finally {
      expect((await server.close()).code).toBe(0);
    }
  });
});
