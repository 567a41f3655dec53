import { writeFile } from "node:fs/promises";
import { join } from "node:path";
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

  it("harness eval TASKS --database runs a suite on the pool and counts a task passed only when verified", async () => {
    pool = await startPool();
    const [good, bad] = [await pool.workspace("good"), await pool.workspace("bad")];
    const line = (session: string, workspace: string, accept: string) =>
      JSON.stringify({
        goal: "append",
        workspace,
        session,
        script: pool?.script,
        shell: "allow",
        accept: [accept],
      });
    const suite = join(pool.dir, "suite.jsonl");
    await writeFile(
      suite,
      `${line("eval-good", good, "test -f effects.txt")}\n${line("eval-bad", bad, "false")}\n`,
    );
    pool.startWorker({ concurrency: 2 });
    const result = await harness(["eval", suite, "--database", pool.schema.url]);
    expect(result.stdout).toBe(
      "FAIL eval-bad (stopped)\npass eval-good (verified)\npassed 1 of 2 tasks (2 finished)\n",
    );
    expect(result.code).toBe(2);
    expect(await effects(good)).toBe(1);
  });

  it("refuses bad input with a usage error that says what to fix, queuing nothing", async () => {
    pool = await startPool();
    const missing = await harness(["queue", "submit", "--script", "x.json", "goal"]);
    expect(missing.code).toBe(64);
    expect(missing.stderr).toContain("--database URL is required");
    const tasks = join(pool.dir, "bad.jsonl");
    await writeFile(tasks, `${JSON.stringify({ goal: "g", workspace: "/tmp" })}\n{"goal": "g"}\n`);
    const bad = await harness(["queue", "submit", "--database", pool.schema.url, "--tasks", tasks]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain("line 2");
    expect(bad.stderr).toContain("workspace");
    expect(bad.stderr).not.toContain("    at ");
    const builtin = await harness(["eval", "faults", "--database", pool.schema.url]);
    expect(builtin.code).toBe(64);
    expect(builtin.stderr).toContain("with --database, name a tasks file");
    expect(await (await pool.db()).status()).toEqual([]);
  });
});
