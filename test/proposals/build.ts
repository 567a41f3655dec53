import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../e2e/helpers.js";

/**
 * Build the CLI fresh (these tests exercise code that may be newer than dist). A directory lock
 * keeps two test files from running tsc over the same outputs at once; a waiter reuses the build.
 */
export function buildFresh(expected: string): void {
  const lock = join(tmpdir(), "harness-proposals-build.lock");
  let owner = false;
  try {
    mkdirSync(lock);
    owner = true;
  } catch {
    // Someone else is building: wait for them.
  }
  if (owner) {
    try {
      execFileSync(
        process.execPath,
        [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
        {
          cwd: REPO_ROOT,
          stdio: "ignore",
        },
      );
    } catch {
      // Type errors elsewhere in the tree still emit JavaScript; a missing output is caught below.
    } finally {
      rmdirSync(lock);
    }
  } else {
    const deadline = Date.now() + 180_000;
    while (existsSync(lock) && Date.now() < deadline) execFileSync("sleep", ["0.2"]);
  }
  if (!existsSync(join(REPO_ROOT, expected))) throw new Error(`the build did not produce ${expected}`);
}
