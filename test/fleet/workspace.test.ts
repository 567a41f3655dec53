import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { materialize, WorkspaceSourceError } from "../../src/fleet/workspace.js";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import { harness, removeTempDirs, tempDir } from "../e2e/helpers.js";
import { allDone, type Pool, startPool } from "./support.js";

let pool: Pool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
  await removeTempDirs();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("materialized workspaces", () => {
  it("copies a directory without its .harness state, and checks out the named git revision; an option-like revision is refused", async () => {
    const dir = await tempDir("harness-fleet-ws-");
    const source = join(dir, "source");
    await mkdir(join(source, ".harness", "sessions"), { recursive: true });
    await writeFile(join(source, "a.txt"), "a\n");
    const copy = await materialize({ copy: source }, join(dir, "copy"));
    expect(await readFile(join(copy, "a.txt"), "utf8")).toBe("a\n");
    expect(existsSync(join(copy, ".harness"))).toBe(false);

    const repo = join(dir, "repo");
    await mkdir(repo);
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: repo })
        .toString()
        .trim();
    git("init", "-q");
    await writeFile(join(repo, "v.txt"), "one\n");
    git("add", ".");
    git("commit", "-qm", "one");
    const first = git("rev-parse", "HEAD");
    await writeFile(join(repo, "v.txt"), "two\n");
    git("commit", "-qam", "two");
    const checkout = await materialize({ git: repo, revision: first }, join(dir, "checkout"));
    expect(await readFile(join(checkout, "v.txt"), "utf8")).toBe("one\n");
    await expect(materialize({ git: repo, revision: "--upload-pack=x" }, join(dir, "x"))).rejects.toThrow(
      WorkspaceSourceError,
    );
  });

  it("a session whose copied workspace was on a dead worker's disk stops for review, never re-run from scratch", async () => {
    pool = await startPool();
    const source = await pool.workspace("source");
    await writeFile(join(source, "README"), "project\n");
    const submitted = await harness([
      "queue",
      "submit",
      "--database",
      pool.schema.url,
      "--session",
      "lost-1",
      "--copy-from",
      source,
      "--script",
      pool.script,
      "--shell",
      "allow",
      "append a line",
    ]);
    expect(submitted.code).toBe(0);
    const a = pool.startWorker({ leaseMs: 1000, env: { FLEET_MODEL_DELAY_MS: "5000" } });
    const deadline = Date.now() + 15_000;
    while (!pool.logs.join("").includes("session lost-1: taken")) {
      if (Date.now() > deadline) throw new Error(pool.logs.join(""));
      await sleep(50);
    }
    await sleep(800);
    a.kill("SIGKILL");
    pool.startWorker({ leaseMs: 1000 });
    const [row] = await pool.waitUntil(allDone(1), 20_000);
    expect(row).toMatchObject({ status: "review_required", requeues: 1 });
    const records = await new PgJournalStore(pool.schema.pool).read("lost-1");
    expect(records.at(-1)).toMatchObject({
      type: "run.stopped",
      data: { status: "review_required", reason: "workspace_lost" },
    });
    expect(records.some((record) => record.type === "tool.started")).toBe(false);
    // Nothing ran in the source, and the second worker made no fresh copy to start over in.
    expect(existsSync(join(source, "effects.txt"))).toBe(false);
    expect(existsSync(join(pool.dir, "worker-1", "lost-1"))).toBe(false);
  });
});
