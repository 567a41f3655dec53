// The bwrap probe runs once per boot, user and bwrap binary, not once per harness process: a
// short task runs one sandboxed command (its acceptance check), and the probe doubled its cost.
// Only a successful probe is remembered, so an unusable bwrap is still found out every time.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  finished,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { startHarnessWith } from "./helpers.js";

afterAll(removeTempDirs);

/** A bwrap stand-in that logs whether each call is the probe (`-- true`), then runs the real one. */
async function loggingBwrap(dir: string, probeFails: boolean): Promise<{ path: string; log: string }> {
  const log = join(dir, "calls.log");
  const path = join(dir, "bwrap");
  await writeFile(
    path,
    [
      "#!/bin/sh",
      'last=""; for a in "$@"; do last="$a"; done',
      `if [ "$last" = "true" ]; then echo probe >> '${log}'; ${probeFails ? "exit 1" : ":"}; else echo command >> '${log}'; fi`,
      'exec /usr/bin/bwrap "$@"',
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  return { path, log };
}

async function runOnce(bwrap: string, home: string): Promise<{ code: number | null; checks: unknown[] }> {
  const workspace = await workspaceWith({ "a.txt": "a\n" });
  const config = join(home, "config.json");
  await writeFile(config, JSON.stringify({ sandbox: { profile: "workspace-write", bwrap_path: bwrap } }));
  const script = await jsonScript([{ text: "done" }]);
  const result = await finished(
    startHarnessWith(
      [
        "run",
        "--script",
        script,
        "-w",
        workspace,
        "--session",
        "memo",
        "--json",
        "--accept",
        "test -f a.txt",
        "goal",
      ],
      { HOME: home, HARNESS_CONFIG: config, XDG_CACHE_HOME: join(home, ".cache") },
    ),
  );
  const checks = ofType(await readJournal(workspace, "memo"), "acceptance.checked").flatMap(
    (r) => r.data.checks as unknown[],
  );
  return { code: result.code, checks };
}

describe("the bwrap probe", () => {
  it("runs in the first process only; later processes reuse the remembered success", async () => {
    const home = await tempDir("harness-memo-home-");
    const bwrap = await loggingBwrap(home, false);
    const first = await runOnce(bwrap.path, home);
    const second = await runOnce(bwrap.path, home);
    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    expect(second.checks).toEqual([
      expect.objectContaining({ passed: true, sandbox_profile: "workspace-write" }),
    ]);
    // Each run starts two sandboxes (the holder of the session's network namespace, then the
    // acceptance command in it); only the first process probes.
    expect((await readFile(bwrap.log, "utf8")).trim().split("\n")).toEqual([
      "probe",
      "command",
      "command",
      "command",
      "command",
    ]);
  });

  it("a failed probe is not remembered: every process probes again and runs nothing", async () => {
    const home = await tempDir("harness-memo-home-");
    const bwrap = await loggingBwrap(home, true);
    const first = await runOnce(bwrap.path, home);
    const second = await runOnce(bwrap.path, home);
    expect(first.code).toBe(2);
    expect(second.code).toBe(2);
    expect(second.checks).toEqual([expect.objectContaining({ passed: false })]);
    expect((await readFile(bwrap.log, "utf8")).trim().split("\n")).toEqual(["probe", "probe"]);
  });
});
