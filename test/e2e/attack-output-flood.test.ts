import { readdirSync, statSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A command that prints without end: memory was bounded (a head and a tail), but every byte was
 * stored as the call's artifact under .harness, at about 280 MB/s: a command printing for the
 * length of its timeout wrote tens of gigabytes, and a model can run as many as it likes (and an
 * acceptance command running the model's test can do the same). Each stream now stores at most
 * 64 MiB; past that nothing of it is stored, and the result says so.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const FLOOD_BYTES = 200_000_000;
const LIMIT = 64 * 1024 * 1024;

function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? bytesUnder(path) : statSync(path).size;
  }
  return total;
}

describe("a command that floods its output", () => {
  it("stores none of a stream past 64 MiB, keeps its head and tail, and says it was not stored", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    const config = join(await tempDir("harness-config-"), "config.json");
    await writeFile(config, "{}");
    const flood = `head -c ${FLOOD_BYTES} /dev/zero | tr '\\0' x; echo end`;
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command: flood } }] },
      { text: "done" },
    ]);
    const child = startHarness(
      [
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--shell",
        "allow",
        "--accept",
        flood,
        "--json",
        "go",
      ],
      { env: { ...childEnv(), HARNESS_CONFIG: config } },
    );
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    const result = await finished(child).finally(() => clearTimeout(timer));
    expectExit(result, 0);
    expect(jsonSummary(result)).toMatchObject({ status: "verified" });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const shell = resultsByCall(records).get("s1") as
      | { data: { stdout: Record<string, unknown> } }
      | undefined;
    expect(shell).toBeDefined();
    const stdout = shell?.data.stdout ?? {};
    expect(stdout).toMatchObject({
      bytes: FLOOD_BYTES + 4,
      artifact: null,
      artifact_error: `the output passed ${LIMIT} bytes and was not stored; only its head and tail are kept`,
    });
    expect(String(stdout.head).startsWith("xxxx")).toBe(true);
    expect(String(stdout.tail).endsWith("xend\n")).toBe(true);
    expect(JSON.stringify(ofType(records, "acceptance.checked"))).toContain('"passed":true');
    // Two floods of 200 MB each (the call's and the acceptance check's), and the state directory
    // holds less than one limit.
    expect(bytesUnder(join(workspace, ".harness"))).toBeLessThan(LIMIT);
  }, 150_000);
});
