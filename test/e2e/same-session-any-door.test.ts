import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgJournalBackend } from "../../src/journal/pg/store.js";
import { createSession } from "../../src/session/create.js";
import { startPool } from "../fleet/support.js";
import {
  ensureBuilt,
  expectExit,
  harness,
  jsonSummary,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  tempDir,
  finished,
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
const REPLIES = [
  { text: "writing", calls: [{ id: "w1", name: "write_file", arguments: { path: "hello.txt", content: "hi\n" } }] },
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
    const records = await new PgJournalBackend(pool.schema.pool).read("door-worker");
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
    // Where each process ran: its purpose and the sandbox profile it ran in.
    sandbox: records
      .filter((record) => record.type === "process.spawned")
      .map((record) => ({ purpose: record.data.purpose, profile: record.data.sandbox_profile })),
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
    for (const other of others) expect({ door: other.door, setup: other.setup }).toEqual({
      door: other.door,
      setup: reference!.setup,
    });
    expect(reference!.setup.options).toEqual({
      write: "allow",
      shell: "deny",
      allow: [ALLOW],
      deny: [DENY],
      defaults: expect.anything(),
    });
  }, 120_000);
});
