import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, REPO_ROOT, removeTempDirs, tempDir } from "../e2e/helpers.js";
import { mulberry32 } from "../support/random.js";

/*
 * A process killed (SIGKILL) at any instant while it takes and releases a session's writer lock
 * leaves either no lock or a whole one naming it, never an empty or half-written lock: that one
 * reads as an unknown owner, which nothing takes over without a person (`unlock --force`), so a
 * crashed parent's resume would fail the sub-agent whose lock it was taking.
 */

beforeAll(ensureBuilt);
afterAll(removeTempDirs);

const KILLS = 20;

/** Takes and releases the lock in a loop; says "ready" once it has taken it the first time. */
function locker(dir: string) {
  const lockModule = pathToFileURL(join(REPO_ROOT, "dist/src/journal/lock.js")).href;
  const code = `
    const { acquireLock, releaseLock } = await import(${JSON.stringify(lockModule)});
    const path = ${JSON.stringify(join(dir, "writer.lock"))};
    let first = true;
    for (;;) {
      const lock = acquireLock(path, "s1", new Date());
      if (first) { process.stdout.write("ready\\n"); first = false; }
      releaseLock(lock);
    }`;
  return spawn(process.execPath, ["--input-type=module", "-e", code], {
    stdio: ["ignore", "pipe", "inherit"],
  });
}

describe("the writer lock under SIGKILL", () => {
  it(`is absent or whole, naming its owner, after each of ${KILLS} kills at random instants`, async () => {
    const seed = Number(process.env.HARNESS_TEST_SEED ?? Date.now() % 100_000);
    const random = mulberry32(seed);
    for (let kill = 0; kill < KILLS; kill += 1) {
      const dir = await tempDir("harness-lock-kill-");
      const child = locker(dir);
      const exit = new Promise((resolve) => child.once("exit", resolve));
      await new Promise((resolve) => child.stdout.once("data", resolve));
      await new Promise((resolve) => setTimeout(resolve, 1 + Math.floor(random() * 20)));
      child.kill("SIGKILL");
      await exit;
      const where = `seed ${seed}, kill ${kill}`;
      const names = readdirSync(dir);
      if (names.includes("writer.lock")) {
        const text = readFileSync(join(dir, "writer.lock"), "utf8");
        expect(text, where).toMatch(/^\{.*\}\n$/);
        expect(JSON.parse(text).pid, where).toBe(child.pid);
      }
      // At most the private file of an acquisition cut short, named by the killed pid.
      expect(
        names.filter((name) => name !== "writer.lock"),
        where,
      ).toEqual(
        names.filter((name) => name.startsWith(`writer.lock.${child.pid}-`) && name.endsWith(".new")),
      );
    }
  }, 120_000);
});
