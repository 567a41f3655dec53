import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { displayWidth } from "../../src/shared/text-width.js";
import {
  BIN,
  childEnv,
  ensureBuilt,
  finished,
  harness,
  jsonScript,
  removeTempDirs,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** Paths whose width in columns differs from their length in characters. */
const PATHS = ["plain.txt", "日本語のファイル.txt", "👍👍-notes.md", "cafe\u0301-menu.txt", "한국어.txt"];

describe("terminal tables and fitted lines are measured in columns (CJK, emoji, combining marks)", () => {
  it("harness apply's table: the proposal-id column starts at the same column on every row", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      {
        text: "Writing.",
        calls: PATHS.map((path, i) => ({
          id: `w${i}`,
          name: "write_file",
          arguments: { path, content: "x\n" },
        })),
      },
      { text: "done" },
    ]);
    const run = await harness(["run", "--script", script, "-w", workspace, "--write", "propose", "files"]);
    // 4: the proposals wait for review.
    expect(run.code, run.stderr).toBe(4);
    const apply = await harness(["apply", "--last", "-w", workspace]);
    expect(apply.code, apply.stderr).toBe(0);
    const rows = apply.stdout.split("\n").filter((line) => line.startsWith("applied "));
    expect(rows).toHaveLength(PATHS.length);
    const idColumns = rows.map((row) => displayWidth(row.slice(0, row.indexOf("p-"))));
    const widest = Math.max(...PATHS.map(displayWidth));
    // "applied" padded to 15, two spaces, the widest path, two spaces.
    expect(idColumns).toEqual(PATHS.map(() => 15 + 2 + widest + 2));
  }, 120_000);

  it("inspect fitted to COLUMNS cuts lines of wide text by columns, never past the edge", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([{ text: `答え：${"日本語のテキスト👍".repeat(10)}` }]);
    const goal = `目標 ${"漢字と絵文字🇯🇵".repeat(10)}`;
    const run = await harness(["run", "--script", script, "-w", workspace, "--session", "wide", goal]);
    expect(run.code, run.stderr).toBe(0);
    const env = { ...childEnv(), COLUMNS: "40" };
    const inspect = await finished(
      spawn(process.execPath, [BIN, "inspect", "wide", "-w", workspace], {
        env,
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    expect(inspect.code, inspect.stderr).toBe(0);
    const lines = inspect.stdout.split("\n");
    const wide = lines.filter((line) => /[\u3040-\u9fff]/.test(line));
    expect(wide.length).toBeGreaterThan(0);
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(40);
    // Cut lines use the width they have (a wide character never straddles the edge).
    for (const line of wide.filter((l) => l.endsWith("…")))
      expect(displayWidth(line)).toBeGreaterThanOrEqual(39);
  }, 120_000);
});
