import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  FIXTURES,
  finished,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * Two harness processes, each with its own session on one workspace, read the same file and
 * then write it bound to the version they read, released at the same moment. Exactly one
 * write may succeed; the other must be STALE_VERSION, and the file must hold the winner's bytes.
 */

const WRITERS = 3;
const ROUNDS = 4;
let config: string;

beforeAll(async () => {
  ensureBuilt();
  config = join(await tempDir("harness-config-"), "config.json");
  await writeFile(config, "{}");
});
afterAll(removeTempDirs);

/** A scripted model: read shared.txt, wait for the release file, then write it at the version read. */
function writerScript(release: string, content: string): string {
  return `
import { existsSync } from "node:fs";
import { versionFrom } from ${JSON.stringify(pathToFileURL(join(FIXTURES, "versions.mjs")).href)};
export default function (messages, step) {
  if (step === 0) return { calls: [{ id: "read", name: "read_file", arguments: { path: "shared.txt" } }] };
  if (step === 1) {
    const pause = new Int32Array(new SharedArrayBuffer(4));
    while (!existsSync(${JSON.stringify(release)})) Atomics.wait(pause, 0, 0, 2);
    const version = versionFrom(messages, "read");
    return { calls: [{ id: "write", name: "write_file",
      arguments: { path: "shared.txt", content: ${JSON.stringify(content)}, expected_version: version } }] };
  }
  return { text: "done" };
}
`;
}

describe("compare-and-swap between harness processes", () => {
  it("of several runs writing one file from the same version, exactly one succeeds", async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      const workspace = await workspaceWith({ "shared.txt": "before\n" });
      const dir = await tempDir("harness-cas-scripts-");
      const release = join(dir, "release");
      const ready = join(workspace, ".harness", "sessions");
      const runs = [];
      for (let i = 0; i < WRITERS; i++) {
        const script = join(dir, `writer-${i}.mjs`);
        await writeFile(script, writerScript(release, `written by ${i}\n`));
        const child = startHarness(
          [
            ...["run", "--script", script, "--workspace", workspace, "--write", "allow"],
            ...["--shell", "deny", "--session", `w${i}`, "--json", "write shared.txt"],
          ],
          { env: { ...childEnv(), HARNESS_CONFIG: config } },
        );
        runs.push(finished(child));
      }
      // Release the writers once every one of them has read the file.
      const deadline = Date.now() + 60_000;
      const haveRead = async () => {
        for (let i = 0; i < WRITERS; i++) {
          if (!existsSync(join(ready, `w${i}`, "events.jsonl"))) return false;
          const results = ofType(await readJournal(workspace, `w${i}`), "tool.result");
          if (results.length === 0) return false;
        }
        return true;
      };
      while (!(await haveRead()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await writeFile(release, "");
      const results = await Promise.all(runs);
      for (const result of results) expect(jsonSummary(result)).toMatchObject({ status: "unverified" });

      const writes = [];
      for (let i = 0; i < WRITERS; i++) {
        const records = await readJournal(workspace, `w${i}`);
        const write = ofType(records, "tool.result").find((r) => r.data.call_id === "write");
        writes.push({ writer: i, status: write?.data.status, error: write?.data.error_type });
      }
      const ok = writes.filter((w) => w.status === "ok");
      expect(ok, JSON.stringify(writes)).toHaveLength(1);
      expect(writes.filter((w) => w.status !== "ok").map((w) => w.error)).toEqual(
        Array(WRITERS - 1).fill("STALE_VERSION"),
      );
      expect(await readFile(join(workspace, "shared.txt"), "utf8")).toBe(`written by ${ok[0]!.writer}\n`);
    }
  }, 180_000);
});
