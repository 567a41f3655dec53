import { type ChildProcess, fork } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { versionOf } from "../../src/workspace/version.js";
import { ensureBuilt, REPO_ROOT } from "../e2e/helpers.js";

/**
 * Compare-and-swap across processes: several separate Node processes, each with its own
 * DiskWorkspaceFs (the built one, as the CLI uses it) on the same workspace, write one file
 * with the same expected version at the same moment, round after round.
 */
const WRITERS = 6;
const ROUNDS = 40;

const CHILD = `
import { DiskWorkspaceFs } from ${JSON.stringify(pathToFileURL(path.join(REPO_ROOT, "dist/src/workspace/disk-fs.js")).href)};
const fs = await DiskWorkspaceFs.create(process.argv[2]);
process.on("message", async ({ round, expected, content }) => {
  try {
    await fs.writeFileAtomic("shared.txt", new TextEncoder().encode(content), { expectedVersion: expected });
    process.send({ round, content, outcome: "ok" });
  } catch (error) {
    process.send({ round, content, outcome: error.code ?? String(error) });
  }
});
process.send({ ready: true });
`;

interface Answer {
  round: number;
  content: string;
  outcome: string;
}

let dir: string;
let workspace: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  ensureBuilt();
  dir = await mkdtemp(path.join(tmpdir(), "harness-cas-"));
  workspace = path.join(dir, "ws");
  await writeFile(path.join(dir, "writer.mjs"), CHILD);
  await import("node:fs/promises").then((fsp) => fsp.mkdir(workspace));
  await writeFile(path.join(workspace, "shared.txt"), "round 0\n");
  const ready: Promise<void>[] = [];
  for (let i = 0; i < WRITERS; i++) {
    const child = fork(path.join(dir, "writer.mjs"), [workspace], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    children.push(child);
    ready.push(new Promise((resolve) => child.once("message", () => resolve())));
  }
  await Promise.all(ready);
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await rm(dir, { recursive: true, force: true });
});

function answers(round: number): Promise<Answer[]> {
  return Promise.all(
    children.map(
      (child) =>
        new Promise<Answer>((resolve) => {
          const onMessage = (message: Answer) => {
            if (message.round !== round) return;
            child.off("message", onMessage);
            resolve(message);
          };
          child.on("message", onMessage);
        }),
    ),
  );
}

describe("compare-and-swap across processes", () => {
  it("exactly one of several concurrent writers with the same expected version succeeds, every round", async () => {
    const winners: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const before = await readFile(path.join(workspace, "shared.txt"));
      const expected = versionOf(before);
      const pending = answers(round);
      children.forEach((child, i) => {
        child.send({ round, expected, content: `round ${round} by writer ${i}\n` });
      });
      const results = await pending;
      const ok = results.filter((r) => r.outcome === "ok");
      const others = results.filter((r) => r.outcome !== "ok").map((r) => r.outcome);
      expect(ok, `round ${round}: ${JSON.stringify(results)}`).toHaveLength(1);
      expect(others).toEqual(Array(WRITERS - 1).fill("STALE_VERSION"));
      // The write reported ok is the one on disk: nothing overwrote it unseen.
      expect(await readFile(path.join(workspace, "shared.txt"), "utf8")).toBe(ok[0]?.content);
      winners.push(ok[0]!.content);
    }
    expect(winners).toHaveLength(ROUNDS);
    // Locks are released after every write and live only in the reserved directory.
    expect(await readdir(path.join(workspace, ".harness", "locks"))).toEqual([]);
    expect((await readdir(workspace)).sort()).toEqual([".harness", "shared.txt"]);
  }, 120_000);
});
