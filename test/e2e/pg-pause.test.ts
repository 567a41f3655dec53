import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { JournalKey } from "../../src/journal/key.js";
import { acquireLease } from "../../src/journal/pg/lease.js";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import { event } from "../../src/journal/vocabulary.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";
import { ensureBuilt, REPO_ROOT } from "./helpers.js";

/**
 * A real worker process holding a session's lease is paused (SIGSTOP) past its lease while another
 * takes the session over, then resumed: its next append is refused (FENCED) and writes nothing,
 * and its lease reports itself lost.
 */

const DIST = join(REPO_ROOT, "dist/src/journal");
const WORKER = `
import pg from "pg";
const { acquireLease } = await import(${JSON.stringify(join(DIST, "pg/lease.js"))});
const { PgJournalStore } = await import(${JSON.stringify(join(DIST, "pg/store.js"))});
const { JournalKey } = await import(${JSON.stringify(join(DIST, "key.js"))});
const pool = new pg.Pool({ connectionString: process.env.DB_URL });
const lease = await acquireLease(pool, "s1", "paused-worker", 800, { renewEveryMs: 200 });
const writer = await new PgJournalStore(pool, { key: JournalKey.ephemeral() }).openWriter("s1", { create: true, lease });
await writer.append([{ type: "user.input", data: { text: "worker: before the pause" } }]);
process.stdout.write("ready\\n");
process.stdin.once("data", async () => {
  let code = "appended";
  try {
    await writer.append([{ type: "user.input", data: { text: "worker: the pending call's intent" } }]);
  } catch (error) {
    code = error.code;
  }
  process.stdout.write(JSON.stringify({ code, lost: lease.lost.aborted }) + "\\n");
  await pool.end();
  process.exit(0);
});
`;

let db: TempPgSchema;
let child: ChildProcess | undefined;

beforeAll(() => ensureBuilt());
beforeEach(async () => {
  db = await tempPgSchema();
});
afterEach(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGCONT");
    child.kill("SIGKILL");
  }
  await db.cleanup();
});

function nextLine(process: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const end = text.indexOf("\n");
      if (end === -1) return;
      process.stdout?.off("data", onData);
      resolve(text.slice(0, end));
    };
    process.stdout?.on("data", onData);
    process.once("exit", (code) => reject(new Error(`worker exited (${code}) before a line`)));
  });
}

it("refuses the append of a worker resumed after SIGSTOP once another took its lease over", async () => {
  child = spawn(process.execPath, ["--input-type=module", "-e", WORKER], {
    cwd: REPO_ROOT,
    env: { ...process.env, DB_URL: db.url },
    stdio: ["pipe", "pipe", "inherit"],
  });
  expect(await nextLine(child)).toBe("ready");
  child.kill("SIGSTOP");
  await delay(1200);
  const taken = await acquireLease(db.newPool(), "s1", "new-owner", 60_000, { renewEveryMs: 0 });
  expect(taken).toMatchObject({ epoch: 2, previous: { owner: "paused-worker", epoch: 1 } });
  const writer = await new PgJournalStore(db.pool, { key: JournalKey.ephemeral() }).openWriter("s1", {
    create: false,
    adopt: true,
    lease: taken!,
  });
  const head = writer.last!;
  await writer.append([
    event("journal.adopted", {
      head_hash: head.hash,
      records: writer.length,
      key_id: writer.keyId,
      previous_key_id: null,
      reason: "test",
      by: "new-owner",
    }),
    event("lease.acquired", { epoch: 2, owner: "new-owner", previous: { owner: "paused-worker", epoch: 1 } }),
  ]);
  child.kill("SIGCONT");
  // Let its renewal timer run once: it finds the lease taken.
  await delay(400);
  const reply = nextLine(child);
  child.stdin?.write("go\n");
  expect(JSON.parse(await reply)).toEqual({ code: "FENCED", lost: true });
  const rows = await db.pool.query<{ line: string }>("SELECT line FROM harness_records ORDER BY seq");
  expect(rows.rows.map((row) => (JSON.parse(row.line) as { type: string }).type)).toEqual([
    "user.input",
    "journal.adopted",
    "lease.acquired",
  ]);
  await writer.close();
  await taken!.release();
});
