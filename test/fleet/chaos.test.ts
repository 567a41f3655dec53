import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import { harness, removeTempDirs } from "../e2e/helpers.js";
import { allDone, effects, type Pool, startPool } from "./support.js";

let pool: Pool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
  await removeTempDirs();
});

const SESSIONS = 40;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("workers killed at random points", () => {
  it("40 sessions with side effects: none lost, each effect once or flagged unknown, every journal verifies", {
    timeout: 90_000,
  }, async () => {
    pool = await startPool();
    const workspaces: string[] = [];
    const lines: string[] = [];
    for (let index = 0; index < SESSIONS; index += 1) {
      const workspace = await pool.workspace(`s${index}`);
      workspaces.push(workspace);
      lines.push(
        JSON.stringify({
          goal: "append a line",
          workspace,
          session: `chaos-${index}`,
          script: pool.script,
          shell: "allow",
          accept: ["test -f effects.txt"],
        }),
      );
    }
    const tasksFile = join(pool.dir, "tasks.jsonl");
    await writeFile(tasksFile, `${lines.join("\n")}\n`);
    const submitted = await harness(["queue", "submit", "--database", pool.schema.url, "--tasks", tasksFile]);
    expect(submitted.stderr).toBe("");
    expect(submitted.stdout.trim().split("\n")).toHaveLength(SESSIONS);

    // Model replies take 150 ms, so kills land before, during and after the shell calls.
    const env = { FLEET_MODEL_DELAY_MS: "150" };
    const live = () =>
      pool?.workers.filter((child) => child.exitCode === null && child.signalCode === null) ?? [];
    for (let index = 0; index < 4; index += 1) pool.startWorker({ leaseMs: 3000, concurrency: 3, env });
    let kills = 0;
    const killing = (async () => {
      const until = Date.now() + 12_000;
      while (Date.now() < until) {
        await sleep(700 + Math.floor(Math.random() * 900));
        const running = live();
        const victim = running[Math.floor(Math.random() * running.length)];
        victim?.kill("SIGKILL");
        kills += 1;
        pool?.startWorker({ leaseMs: 3000, concurrency: 3, env });
      }
    })();
    await killing;
    const rows = await pool.waitUntil(allDone(SESSIONS), 45_000);
    expect(kills).toBeGreaterThan(5);

    const journal = new PgJournalStore(pool.schema.pool);
    for (const [index, workspace] of workspaces.entries()) {
      const session = `chaos-${index}`;
      const row = rows.find((each) => each.session === session);
      // read() verifies the whole chain and its authentication, or throws.
      const records = await journal.read(session);
      const count = await effects(workspace);
      const unknown = records.some(
        (record) => record.type === "tool.result" && record.data.status === "unknown",
      );
      if (row?.status === "verified") {
        expect({ session, count, unknown }).toEqual({ session, count: 1, unknown: false });
      } else {
        // Killed while its call ran: flagged for review, never run a second time.
        expect({ session, status: row?.status, unknown }).toEqual({
          session,
          status: "review_required",
          unknown: true,
        });
        expect(count).toBeLessThanOrEqual(1);
      }
      expect(records.filter((record) => record.type === "tool.started").length).toBeLessThanOrEqual(1);
    }
  });
});
