import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { verifyJournal } from "../../src/journal/verify.js";
import { ensureBuilt, finished, fixture, onStdoutLine } from "./helpers.js";

/**
 * Six sessions of one process share a group commit widened with fsync threads (as `harness serve`
 * has it: more fsyncs wanted at once than libuv's pool share, so threads take the rest); SIGKILL
 * the process right after it reports records durable. Every reported record must be in its
 * journal, byte for byte in the chain, and every journal must verify.
 */

const SESSIONS = ["a", "b", "c", "d", "e", "f"];

interface Reported {
  session: string;
  seq: number;
  hash: string;
}

async function killAfter(
  reports: number,
): Promise<{ harnessDir: string; reported: Reported[]; root: string }> {
  const root = await mkdtemp(join(tmpdir(), "harness-group-threads-crash-"));
  const harnessDir = join(root, ".harness");
  const child = spawn(
    process.execPath,
    [fixture("group-commit-threads-sessions.mjs"), harnessDir, ...SESSIONS],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const reported: Reported[] = [];
  onStdoutLine(child, (line) => {
    reported.push(JSON.parse(line) as Reported);
    const each = SESSIONS.map((s) => reported.filter((r) => r.session === s).length);
    if (Math.min(...each) >= reports) child.kill("SIGKILL");
  });
  const result = await finished(child);
  expect({ signal: result.signal, stderr: result.stderr }).toEqual({ signal: "SIGKILL", stderr: "" });
  return { harnessDir, reported, root };
}

describe("group commit with fsync threads, SIGKILL right after a record is reported durable", () => {
  beforeAll(() => ensureBuilt());

  for (const reports of [1, 25, 120]) {
    it(`keeps every reported record of every session (kill after ${reports} each)`, async () => {
      const { harnessDir, reported, root } = await killAfter(reports);
      try {
        for (const session of SESSIONS) {
          const path = join(harnessDir, "sessions", session, "events.jsonl");
          const verified = await verifyJournal(path);
          expect(verified.ok).toBe(true);
          const onDisk = (await readFile(path, "utf8"))
            .split("\n")
            .filter(Boolean)
            .map((line) => JSON.parse(line) as { seq: number; hash: string });
          const mine = reported.filter((r) => r.session === session);
          expect(mine.length).toBeGreaterThanOrEqual(reports);
          for (const record of mine) expect(onDisk[record.seq]?.hash).toBe(record.hash);
        }
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    }, 60_000);
  }
});
