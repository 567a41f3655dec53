import { existsSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mulberry32 } from "../support/random.js";
import {
  childEnv,
  ensureBuilt,
  finished,
  journalFile,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * harness killed (SIGKILL) at random points while three writing children run and merge back,
 * then resumed: every journal still verifies, each child's merge happened once or its outcome
 * is unknown, and nothing was lost or written twice. The seed is printed: a failing schedule
 * can be replayed.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const LABELS = ["one", "two", "three"];
const RUNS = 30;

async function script(): Promise<string> {
  const child = (label: string) => ({
    replies: [
      {
        text: "",
        calls: [{ id: "w", name: "write_file", arguments: { path: `${label}.txt`, content: `${label}\n` } }],
      },
      { text: `${label} done` },
    ],
  });
  const file = join(await tempDir("harness-agents-crash-"), "script.json");
  await writeFile(
    file,
    JSON.stringify({
      replies: [
        {
          text: "",
          calls: LABELS.map((label, i) => ({
            id: `a${i}`,
            name: "agent",
            arguments: { task: `write ${label}`, label, merge: "apply" },
          })),
        },
        { text: "all merged" },
      ],
      agents: Object.fromEntries(LABELS.map((label) => [label, child(label)])),
    }),
  );
  return file;
}

function cli(args: string[], env: NodeJS.ProcessEnv) {
  return finished(startHarness(args, { env }));
}

describe("SIGKILL of a parent while three writing children run, then resume", () => {
  it(`keeps every journal verifiable and every merge once or unknown, across ${RUNS} random kill points`, async () => {
    const seed = Number(process.env.HARNESS_TEST_SEED ?? Date.now() % 100_000);
    const random = mulberry32(seed);
    const file = await script();
    const env = { ...childEnv(), HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") };
    let resumedRuns = 0;
    for (let run = 0; run < RUNS; run += 1) {
      const where = `seed ${seed}, run ${run}`;
      const workspace = await workspaceWith({ "base.txt": "base\n" });
      const id = `crash${run}`;
      const flags = ["--script", file, "--workspace", workspace, "--write", "allow"];
      const first = startHarness(["run", ...flags, "--session", id, "--json", "go"], { env });
      const exit = finished(first);
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.floor(random() * 1800)));
      first.kill("SIGKILL");
      await exit;
      // Killed before the session's first record: there is nothing to resume.
      if (!existsSync(journalFile(workspace, id)) || (await readJournal(workspace, id)).length === 0)
        continue;
      resumedRuns += 1;
      const resumed = await cli(["resume", id, ...flags, "--json"], env);
      expect([0, 1, 2, 3], `${where}: ${resumed.stderr}`).toContain(resumed.code);

      const verify = await cli(["journal", "verify", id, "--workspace", workspace], env);
      expect(verify.code, `${where}: ${verify.stdout}${verify.stderr}`).toBe(0);
      const parent = await readJournal(workspace, id);
      for (const [i, label] of LABELS.entries()) {
        const callId = `a${i}`;
        expect(
          ofType(parent, "tool.result").filter((r) => r.data.call_id === callId).length,
          where,
        ).toBeLessThanOrEqual(1);
        expect(
          ofType(parent, "agent.merge").filter((r) => r.data.call_id === callId).length,
          where,
        ).toBeLessThanOrEqual(1);
        expect(
          ofType(parent, "agent.finished").filter((r) => r.data.call_id === callId).length,
          where,
        ).toBeLessThanOrEqual(1);
        const childId = `${id}/${label}`;
        if (existsSync(journalFile(workspace, childId))) {
          const child = await cli(["journal", "verify", childId, "--workspace", workspace], env);
          expect(child.code, `${where} ${childId}: ${child.stdout}${child.stderr}`).toBe(0);
          const end = ofType(parent, "agent.finished").find((r) => r.data.call_id === callId);
          if (end)
            expect(end.data.head_hash, where).toBe((await readJournal(workspace, childId)).at(-1)?.hash);
        }
        // The child's file is in the parent's workspace at most once, with its bytes, and every
        // record of it being written names this agent call (or a person: `outside`).
        const path = join(workspace, `${label}.txt`);
        const written = ofType(parent, "workspace.changed").filter((r) =>
          [...(r.data.created as { path: string }[]), ...(r.data.modified as { path: string }[])].some(
            (c) => c.path === `${label}.txt`,
          ),
        );
        if (existsSync(path)) {
          expect(readFileSync(path, "utf8"), where).toBe(`${label}\n`);
          expect(written.length, where).toBe(1);
          expect([callId], where).toContain(written[0]?.data.call_id);
        } else {
          expect(written, where).toEqual([]);
        }
      }
    }
    expect(resumedRuns).toBeGreaterThan(RUNS / 3);
  }, 600_000);
});
