import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JournalKey } from "../../src/journal/key.js";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import type { JournalWriter } from "../../src/journal/store.js";
import { cliEnv, runCli } from "../e2e-providers/cli.js";
import { input } from "../journal/contract.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";
import { ensureBuilt, expectExit, removeTempDirs, tempDir } from "./helpers.js";

/** `harness unlock SESSION --database URL` clears a crashed writer's lock in PostgreSQL, by the file store's rules. */

const JOURNAL_REFUSED = 5;
let env: NodeJS.ProcessEnv;
let db: TempPgSchema;
const writers: JournalWriter[] = [];

beforeAll(async () => {
  ensureBuilt();
  env = cliEnv(await tempDir("harness-pg-unlock-home-"));
});
afterEach(async () => {
  for (const writer of writers.splice(0)) await writer.close().catch(() => undefined);
  await db?.cleanup();
});
afterAll(removeTempDirs);

/** A session `s1` in a fresh schema whose row names `owner` as its writer (undefined: this process, alive). */
async function locked(owner?: Record<string, unknown>): Promise<void> {
  db = await tempPgSchema();
  const writer = await new PgJournalStore(db.pool, { key: JournalKey.ephemeral() }).openWriter("s1", {
    create: true,
  });
  writers.push(writer);
  await writer.append([input("one")]);
  if (owner)
    await db.pool.query("UPDATE harness_sessions SET writer = $1 WHERE session_id = 's1'", [
      JSON.stringify(owner),
    ]);
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid as number;
}

const writerToken = async () =>
  (await db.pool.query("SELECT writer_token FROM harness_sessions WHERE session_id = 's1'")).rows[0]
    .writer_token as string | null;

describe("harness unlock --database", { timeout: 60_000 }, () => {
  it("clears a gone owner's lock, then finds none", async () => {
    const pid = await deadPid();
    await locked({ pid, host: hostname(), started_at: "2025-01-01T00:00:00.000Z", proc_start: null });
    const unlocked = await runCli(["unlock", "s1", "--database", db.url], env);
    expectExit(unlocked, 0);
    expect(unlocked.stdout).toBe(
      `session s1: removed the lock of pid ${pid} on host ${hostname()}, started 2025-01-01T00:00:00.000Z\n`,
    );
    expect(await writerToken()).toBeNull();
    const again = await runCli(["unlock", "s1", "--database", db.url], env);
    expectExit(again, 0);
    expect(again.stdout).toBe("session s1: not locked\n");
  });

  it("clears another host's lock only with --force", async () => {
    await locked({
      pid: 4242,
      host: "another-host.invalid",
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: null,
    });
    const refused = await runCli(["unlock", "s1", "--database", db.url], env);
    expectExit(refused, JOURNAL_REFUSED);
    expect(refused.stderr).toContain("another-host.invalid");
    expect(refused.stderr).toContain("harness unlock s1 --database URL --force");
    expect(await writerToken()).not.toBeNull();
    const forced = await runCli(["unlock", "s1", "--database", db.url, "--force"], env);
    expectExit(forced, 0);
    expect(forced.stdout).toContain("(forced)");
    expect(await writerToken()).toBeNull();
  });

  it("never removes a live writer's lock, even with --force", async () => {
    await locked();
    const token = await writerToken();
    const refused = await runCli(["unlock", "s1", "--database", db.url, "--force"], env);
    expectExit(refused, JOURNAL_REFUSED);
    expect(refused.stderr).toContain("is open in another writer");
    expect(await writerToken()).toBe(token);
  });

  it("names a session that is not there, and refuses --workspace with --database", async () => {
    await locked();
    const missing = await runCli(["unlock", "nope", "--database", db.url], env);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('no session "nope"');
    const both = await runCli(["unlock", "s1", "--database", db.url, "--workspace", "."], env);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain("--workspace and --database name two places");
  });
});
