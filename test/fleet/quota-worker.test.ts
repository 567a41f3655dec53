import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { launchSession } from "../../src/fleet/launcher.js";
import { FleetDatabase } from "../../src/fleet/queue.js";
import { FleetWorker } from "../../src/fleet/worker.js";
import {
  configureQuota,
  ensureQuotaSchema,
  identityScope,
  queueScope,
  quotaLeft,
} from "../../src/journal/pg/quota.js";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import { harness } from "../e2e/helpers.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";

/*
 * A worker given a queue quota: each model request of its sessions reserves against `queue:NAME`
 * before it is sent. The scripted model appends a line to requests.txt for every request it
 * receives and asks for a tool call first, so its session needs two requests.
 */
const COUNTING_SCRIPT = `
import { appendFileSync } from "node:fs";
export default async function (messages) {
  appendFileSync(process.env.QUOTA_REQUESTS_FILE, "request\\n");
  if (!messages.some((message) => message.role === "tool")) {
    return { calls: [{ id: "look", name: "list_files", arguments: {} }] };
  }
  return { text: "done" };
}
`;

/*
 * A parent that delegates: its first reply starts sub-agent `helper` (shared isolation), whose
 * first reply lists the files and whose second ends; the parent then ends. Each request received
 * is one line naming whose it was ("" for the parent), so a test sees which were sent.
 */
const DELEGATING_SCRIPT = `
import { appendFileSync } from "node:fs";
export default async function (messages, step, agent) {
  appendFileSync(process.env.QUOTA_REQUESTS_FILE, "request " + (agent ?? "") + "\\n");
  const answered = messages.some((message) => message.role === "tool");
  if (agent === "helper") {
    return answered ? { text: "helper done" } : { calls: [{ id: "look", name: "list_files", arguments: {} }] };
  }
  if (answered) return { text: "parent done" };
  return {
    calls: [{ id: "delegate", name: "agent", arguments: { task: "look around", label: "helper", isolation: "shared" } }],
  };
}
`;

let root: string;
let schema: TempPgSchema | undefined;
let worker: FleetWorker | undefined;
let db: FleetDatabase | undefined;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-quota-worker-")));
  // Never the user's own key.
  process.env.HARNESS_KEY_FILE = join(root, "journal.key");
  process.env.QUOTA_REQUESTS_FILE = join(root, "requests.txt");
});
afterEach(async () => {
  await worker?.stop();
  await db?.close();
  await schema?.cleanup();
  worker = db = schema = undefined;
  rmSync(root, { recursive: true, force: true });
});

async function requestsSent(): Promise<number> {
  return (await requestLines()).filter((line) => line === "request").length;
}

/** Each request the scripted model received, in order. */
async function requestLines(): Promise<string[]> {
  const text = await readFile(join(root, "requests.txt"), "utf8").catch(() => "");
  return text.split("\n").filter((line) => line.startsWith("request"));
}

/** A fresh schema with the quota table, `queue:NAME` configured as given (none: no quota row). */
async function database(limits?: { name: string; requests: number }): Promise<TempPgSchema> {
  schema = await tempPgSchema();
  await ensureQuotaSchema(schema.pool);
  if (limits !== undefined)
    await configureQuota(schema.pool, queueScope(limits.name), {
      periodMs: 3_600_000,
      requests: limits.requests,
    });
  return schema;
}

/** One session run by an in-process worker (launched as `harness worker` launches it); its status. */
async function runOne(
  pg: TempPgSchema,
  session: string,
  quota: string | undefined,
  delegating = false,
): Promise<string | null> {
  db = await FleetDatabase.open(pg.url, { maxConnections: 2 });
  const script = join(root, "count.mjs");
  await writeFile(script, delegating ? DELEGATING_SCRIPT : COUNTING_SCRIPT);
  const logs: string[] = [];
  worker = await FleetWorker.start({
    database: pg.url,
    concurrency: 1,
    leaseMs: 5_000,
    workDir: join(root, "work"),
    launch: launchSession((line) => logs.push(line), quota === undefined ? {} : { quota }),
    log: (line) => logs.push(line),
  });
  const options = delegating ? { script, "agents-depth": "1" } : { script };
  await db.submit([{ session, goal: "look around", workspace: { shared: root }, options }]);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const row = (await db.status()).find((candidate) => candidate.session === session);
    if (row?.state === "done") return row.status;
    if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(row)}\n${logs.join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stops(pg: TempPgSchema, session: string): Promise<Array<Record<string, unknown>>> {
  if (!(await new PgJournalStore(pg.pool).exists(session))) return [];
  const records = await new PgJournalStore(pg.pool).read(session);
  return records
    .filter((record) => record.type === "run.stopped")
    .map((record) => record.data as Record<string, unknown>);
}

describe("a worker with a queue quota", () => {
  it("stops its session before the request that would exceed the quota: the model never receives it", async () => {
    const pg = await database({ name: "small", requests: 1 });
    const status = await runOne(pg, "quota-1", "small");
    expect(await requestsSent()).toBe(1);
    expect(status).toBe("stopped");
    const [stop] = await stops(pg, "quota-1");
    expect(stop?.reason).toBe("budget_exhausted");
    expect(String(stop?.detail ?? JSON.stringify(stop))).toContain("queue:small");
    expect(await quotaLeft(pg.pool, queueScope("small"))).toEqual({ requests: 0 });
  }, 60_000);

  it("a quota the session fits: both requests sent and counted, the session ends as without one", async () => {
    const pg = await database({ name: "roomy", requests: 2 });
    const status = await runOne(pg, "quota-2", "roomy");
    expect(await requestsSent()).toBe(2);
    expect(status).not.toBe("stopped");
    expect(await stops(pg, "quota-2")).toEqual([]);
    expect(await quotaLeft(pg.pool, queueScope("roomy"))).toEqual({ requests: 0 });
  }, 60_000);

  it("fails closed: a worker told to use a quota nobody configured sends nothing", async () => {
    const pg = await database();
    const status = await runOne(pg, "quota-3", "missing");
    expect(await requestsSent()).toBe(0);
    expect(status).toBe("stopped");
    const [stop] = await stops(pg, "quota-3");
    expect(stop?.reason).toBe("budget_exhausted");
  }, 60_000);

  it("a sub-agent reserves against its worker's quota: the child's request past it is never sent", async () => {
    // Three would be sent without the quota: parent, helper, helper (then the parent again).
    const pg = await database({ name: "family", requests: 2 });
    const status = await runOne(pg, "quota-5", "family", true);
    expect(await requestLines()).toEqual(["request ", "request helper"]);
    expect(status).toBe("stopped");
    const [childStop] = await stops(pg, "quota-5/helper");
    expect(childStop?.reason).toBe("budget_exhausted");
    expect(String(childStop?.message)).toContain("queue:family");
    // The parent's next request did not fit either: it was refused, not sent.
    const [parentStop] = await stops(pg, "quota-5");
    expect(parentStop?.reason).toBe("budget_exhausted");
    expect(await quotaLeft(pg.pool, queueScope("family"))).toEqual({ requests: 0 });
  }, 60_000);

  it("a sub-agent's requests count: the parent's request after its child's is the one refused", async () => {
    const pg = await database({ name: "three", requests: 3 });
    const status = await runOne(pg, "quota-6", "three", true);
    expect(await requestLines()).toEqual(["request ", "request helper", "request helper"]);
    expect(status).toBe("stopped");
    expect(await stops(pg, "quota-6/helper")).toEqual([]);
    const [parentStop] = await stops(pg, "quota-6");
    expect(parentStop?.reason).toBe("budget_exhausted");
    expect(String(parentStop?.message)).toContain("queue:three");
    expect(await quotaLeft(pg.pool, queueScope("three"))).toEqual({ requests: 0 });
  }, 60_000);

  it("journals each reservation before its request, its settling and the refusal; inspect shows them", async () => {
    const pg = await database({ name: "seen", requests: 1 });
    expect(await runOne(pg, "quota-7", "seen")).toBe("stopped");
    expect(await requestsSent()).toBe(1);
    const records = await new PgJournalStore(pg.pool).read("quota-7");
    const types = records.map((record) => record.type);
    // Intent before effect: the hold is durable before model.started, and so before the request.
    const reserved = types.indexOf("quota.reserved");
    const started = types.indexOf("model.started");
    expect(reserved).toBeGreaterThan(-1);
    expect(reserved).toBeLessThan(started);
    expect(types.slice(reserved, started + 1).filter((type) => type.startsWith("quota."))).toEqual([
      "quota.reserved",
    ]);
    expect(records[reserved]?.data).toMatchObject({
      quota: "queue:seen",
      step: 0,
      attempt: 0,
      requests: 1,
      usd: 0,
      left: { requests: 0 },
    });
    const settled = records.find((record) => record.type === "quota.settled");
    const settledTokens = (settled?.data as { tokens?: number } | undefined)?.tokens;
    expect(settled?.seq).toBeGreaterThan(records[started]!.seq);
    expect(settled?.data).toMatchObject({
      quota: "queue:seen",
      step: 0,
      attempt: 0,
      requests: 1,
      left: { requests: 0 },
    });
    // The second request: refused, journaled, then the stop; no model.started for it.
    const refused = types.indexOf("quota.refused");
    expect(refused).toBeGreaterThan(types.indexOf("quota.settled"));
    expect(records[refused]?.data).toMatchObject({
      quota: "queue:seen",
      step: 1,
      requests: 1,
      left: { requests: 0 },
    });
    expect(String((records[refused]?.data as { why?: string } | undefined)?.why)).toContain("0 requests");
    expect(types[refused + 1]).toBe("run.stopped");
    expect(types.filter((type) => type === "model.started")).toHaveLength(1);

    const json = await harness(["inspect", "quota-7", "--database", pg.url, "--json"]);
    expect(json.stderr).toBe("");
    expect(json.code).toBe(0);
    const quota = (JSON.parse(json.stdout) as { quota: unknown }).quota;
    expect(quota).toEqual([
      {
        quota: "queue:seen",
        spent: { usd: 0, tokens: settledTokens, requests: 1 },
        held: { usd: 0, tokens: 0, requests: 0 },
        refused: 1,
        left: { requests: 0 },
      },
    ]);
    const text = await harness(["inspect", "quota-7", "--database", pg.url]);
    expect(text.code).toBe(0);
    const lines = text.stdout.split("\n").filter((line) => line.startsWith("quota"));
    expect(lines).toEqual([
      `quota   queue:seen: 1 requests, ${settledTokens} tokens, $0.0000 spent; 1 refused; left 0 requests`,
    ]);
  }, 60_000);

  it("without a quota nothing changes: no reservation is asked for", async () => {
    const pg = await database({ name: "unused", requests: 0 });
    const status = await runOne(pg, "quota-4", undefined);
    expect(await requestsSent()).toBe(2);
    expect(status).not.toBe("stopped");
    expect(await quotaLeft(pg.pool, queueScope("unused"))).toEqual({ requests: 0 });
    const records = await new PgJournalStore(pg.pool).read("quota-4");
    expect(records.filter((record) => record.type.startsWith("quota."))).toEqual([]);
  }, 60_000);
});

describe("harness queue quota / harness worker --quota", () => {
  it("sets a queue's quota in the database; a bad limit or name is a usage error and sets nothing", async () => {
    const pg = await database();
    const set = await harness([
      "queue",
      "quota",
      "small",
      "--database",
      pg.url,
      "--period",
      "60",
      "--requests",
      "3",
      "--usd",
      "0.5",
    ]);
    expect(set.stderr).toBe("");
    expect(set.stdout).toBe("quota queue:small set\n");
    expect(set.code).toBe(0);
    expect(await quotaLeft(pg.pool, queueScope("small"))).toEqual({ usd: 0.5, requests: 3 });

    const bad = await harness([
      "queue",
      "quota",
      "other",
      "--database",
      pg.url,
      "--period",
      "60",
      "--usd",
      "-1",
    ]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain("--usd");
    expect(await quotaLeft(pg.pool, queueScope("other"))).toBeUndefined();

    const noPeriod = await harness(["queue", "quota", "other", "--database", pg.url, "--requests", "1"]);
    expect(noPeriod.code).toBe(64);
    expect(noPeriod.stderr).toContain("--period");

    const identity = await harness([
      "queue",
      "quota",
      "alice",
      "--identity",
      "--database",
      pg.url,
      "--period",
      "60",
      "--tokens",
      "1000",
    ]);
    expect(identity.stdout).toBe("quota identity:alice set\n");
    expect(await quotaLeft(pg.pool, identityScope("alice"))).toEqual({ tokens: 1000 });

    const serveWithout = await harness(["serve", "--stdio", "--identity-quotas"]);
    expect(serveWithout.code).toBe(64);
    expect(serveWithout.stderr).toContain("--identity-quotas needs --database");

    const badName = await harness(["worker", "--database", pg.url, "--quota", "a b"]);
    expect(badName.code).toBe(64);
    expect(badName.stderr).toContain("quota name");
  }, 60_000);
});
