import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../e2e-providers/cli.js";
import { userEnv } from "../support/user-env.js";
import {
  type CliResult,
  ensureBuilt,
  expectExit,
  journalFile,
  jsonScript,
  lockFile,
  removeTempDirs,
  workspaceWith,
} from "./helpers.js";

/**
 * A repository can ship a session folder: its journal and its writer lock are attacker's bytes.
 * Whatever `journal verify`, `journal adopt`, `unlock` and `resume` print from them reaches the
 * terminal escaped: no escape sequence, no bidi override (NO_COLOR, so harness adds none either).
 */

beforeAll(() => ensureBuilt());
afterAll(() => removeTempDirs());

const ESC = "\u001b";
const RLO = "\u202e";
const HOSTILE = `${ESC}]0;pwned\u0007${ESC}[2K${RLO}gnp.exe`;
const JOURNAL_REFUSED = 5;

function expectNoControl(label: string, result: CliResult): void {
  for (const text of [result.stdout, result.stderr]) {
    expect(text, `${label}: ESC reached the terminal`).not.toContain(ESC);
    expect(text, `${label}: U+202E reached the terminal`).not.toContain(RLO);
    expect(text, `${label}: BEL reached the terminal`).not.toContain("\u0007");
  }
}

/** A finished session "s" recorded by `env`'s user, with the hostile text in its goal and acceptance. */
async function recordedSession(env: NodeJS.ProcessEnv) {
  const workspace = await workspaceWith({ "hello.txt": "hello\n" });
  const script = await jsonScript([{ text: "nothing to do" }]);
  const run = await runCli(
    [
      "run",
      "--script",
      script,
      "-w",
      workspace,
      "--session",
      "s",
      "--accept",
      `true '${HOSTILE}'`,
      `goal ${HOSTILE}`,
    ],
    env,
  );
  expectExit(run, 0);
  return { workspace, script };
}

function writeLock(workspace: string, owner: Record<string, unknown>): void {
  writeFileSync(lockFile(workspace, "s"), `${JSON.stringify(owner)}\n`);
}

describe("journal and lock contents are shown escaped", () => {
  it("unlock shows a lock file's hostile host name escaped, whether refused or forced", async () => {
    const env = await userEnv("escape");
    const { workspace } = await recordedSession(env);
    writeLock(workspace, { pid: 1, host: `elsewhere${HOSTILE}`, started_at: HOSTILE, proc_start: null });

    const refused = await runCli(["unlock", "s", "-w", workspace], env);
    expectExit(refused, JOURNAL_REFUSED);
    expectNoControl("unlock", refused);
    expect(refused.stderr).toContain("on host elsewhere\\x1b]0;pwned\\x07\\x1b[2K\\u202egnp.exe");

    const forced = await runCli(["unlock", "s", "-w", workspace, "--force"], env);
    expectExit(forced, 0);
    expectNoControl("unlock --force", forced);
    expect(forced.stdout).toContain("removed the lock of pid 1 on host elsewhere\\x1b]0;pwned\\x07");
  });

  it("resume's line about a stale lock it took over shows the lock's hostile fields escaped", async () => {
    const env = await userEnv("escape");
    const { workspace, script } = await recordedSession(env);
    const dead = spawnSync("true").pid!;
    writeLock(workspace, { pid: dead, host: hostname(), started_at: HOSTILE, proc_start: null });
    const resumed = await runCli(["resume", "s", "--script", script, "-w", workspace], env);
    expectExit(resumed, 0);
    expectNoControl("resume", resumed);
    expect(resumed.stderr).toContain(`took over the stale writer lock of pid ${dead}`);
    expect(resumed.stderr).toContain("(started \\x1b]0;pwned\\x07\\x1b[2K\\u202egnp.exe)");
  });

  it("verify shows a damaged journal's hostile field escaped, in text and in --json", async () => {
    const env = await userEnv("escape");
    const { workspace } = await recordedSession(env);
    const path = journalFile(workspace, "s");
    const [first, ...rest] = readFileSync(path, "utf8").split("\n");
    const record = JSON.parse(first!) as Record<string, unknown>;
    writeFileSync(path, [JSON.stringify({ ...record, time: HOSTILE }), ...rest].join("\n"));

    const verified = await runCli(["journal", "verify", "s", "-w", workspace], env);
    expectExit(verified, JOURNAL_REFUSED);
    expectNoControl("verify", verified);
    expect(verified.stdout).toContain("malformed time");
    expect(verified.stdout).toContain("\\u202egnp.exe");

    const json = await runCli(["journal", "verify", "s", "-w", workspace, "--json"], env);
    expectExit(json, JOURNAL_REFUSED);
    expectNoControl("verify --json", json);
    // Still exact JSON: the message parses back to the same text, which quotes the bad field.
    expect((JSON.parse(json.stdout) as { message: string }).message).toContain(JSON.stringify(HOSTILE));
  });

  it("adopt shows another user's hostile goal and acceptance command escaped", async () => {
    const { workspace } = await recordedSession(await userEnv("escape"));
    const victim = await userEnv("escape");
    const adopt = await runCli(["journal", "adopt", "s", "-w", workspace], victim);
    expectExit(adopt, JOURNAL_REFUSED);
    expectNoControl("adopt", adopt);
    expect(adopt.stderr).toContain("  goal:                goal \\x1b]0;pwned\\x07\\x1b[2K\\u202egnp.exe");
    expect(adopt.stderr).toContain("    true '\\x1b]0;pwned\\x07\\x1b[2K\\u202egnp.exe'");

    const adopted = await runCli(["journal", "adopt", "s", "-w", workspace, "--yes", "--json"], victim);
    expectExit(adopted, 0);
    expectNoControl("adopt --json", adopted);
    expect((JSON.parse(adopted.stdout) as { goal: string }).goal).toBe(`goal ${HOSTILE}`);
  });
});
