import { afterEach, describe, expect, it } from "vitest";
import { harness, removeTempDirs } from "../e2e/helpers.js";
import { allDone, effects, type Pool, startPool } from "./support.js";

let pool: Pool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
  await removeTempDirs();
});

describe("harness queue submit / worker / queue status", () => {
  it("runs a submitted session on a worker: its effect happens once and status reports it verified", async () => {
    pool = await startPool();
    const workspace = await pool.workspace("one");
    const submitted = await harness([
      "queue",
      "submit",
      "--database",
      pool.schema.url,
      "--session",
      "fleet-one",
      "--workspace",
      workspace,
      "--script",
      pool.script,
      "--shell",
      "allow",
      "--accept",
      "test -f effects.txt",
      "append a line",
    ]);
    expect(submitted.stderr).toBe("");
    expect(submitted.stdout).toBe("queued fleet-one\n");
    expect(submitted.code).toBe(0);
    pool.startWorker();
    const rows = await pool.waitUntil(allDone(1), 20_000);
    expect(rows[0]).toMatchObject({ session: "fleet-one", state: "done", status: "verified", requeues: 0 });
    expect(await effects(workspace)).toBe(1);

    const status = await harness(["queue", "status", "--database", pool.schema.url, "--json"]);
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as {
      counts: unknown;
      tasks: { session: string; status: string }[];
    };
    expect(parsed.counts).toEqual({ queued: 0, running: 0, done: 1 });
    expect(parsed.tasks.map((task) => [task.session, task.status])).toEqual([["fleet-one", "verified"]]);
  });
});
