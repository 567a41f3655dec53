import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson, digestOf } from "../../src/shared/hash.js";
import { runCli } from "../e2e-providers/cli.js";
import { userEnv } from "../support/user-env.js";
import {
  ensureBuilt,
  expectExit,
  journalFile,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  workspaceWith,
} from "./helpers.js";

/**
 * `harness inspect` shows what each process harness started ran under, as the journal recorded
 * it: purpose, sandbox profile and the names of the environment variables it received (never
 * their values), for shell commands and acceptance commands alike, escaped like everything else
 * read back from a journal.
 */

beforeAll(() => ensureBuilt());
afterAll(() => removeTempDirs());

/** A session that ran one shell command and one acceptance command. */
async function sessionWithProcesses(env: NodeJS.ProcessEnv) {
  const workspace = await workspaceWith({ "hello.txt": "hello\n" });
  const script = await jsonScript([
    { calls: [{ id: "sh1", name: "shell", arguments: { command: "cat hello.txt" } }] },
    { text: "done" },
  ]);
  const run = await runCli(
    [
      "run",
      "--script",
      script,
      "-w",
      workspace,
      "--session",
      "s",
      "--shell",
      "allow",
      "--accept",
      "grep -q hello hello.txt",
      "goal",
    ],
    env,
  );
  expectExit(run, 0);
  return workspace;
}

function timelineLine(stdout: string, pattern: RegExp): string {
  const line = stdout.split("\n").find((l) => pattern.test(l));
  if (line === undefined) throw new Error(`no line matching ${pattern} in:\n${stdout}`);
  return line;
}

describe("inspect shows what each process ran under", () => {
  it("a shell command's and an acceptance command's purpose, sandbox profile and environment names", async () => {
    const env = await userEnv("inspect");
    const workspace = await sessionWithProcesses(env);
    const records = await readJournal(workspace, "s");
    const [spawned] = ofType(records, "process.spawned");
    const [checked] = ofType(records, "acceptance.checked");
    const envNames = spawned!.data.env_names as string[];
    expect(spawned!.data).toMatchObject({ purpose: "shell", sandbox_profile: "workspace-write" });
    expect(envNames).toContain("PATH");
    const check = (checked!.data.checks as Record<string, unknown>[])[0]!;
    expect(check).toMatchObject({ purpose: "acceptance", sandbox_profile: "workspace-write" });

    const inspect = await runCli(["inspect", "s", "-w", workspace], env);
    expectExit(inspect, 0);
    expect(timelineLine(inspect.stdout, /process group \d+ for sh1/)).toMatch(
      new RegExp(`for sh1 \\(shell; sandbox workspace-write; env ${envNames.join(",")}\\)$`),
    );
    expect(timelineLine(inspect.stdout, /acceptance passed/)).toContain(
      `✓ grep -q hello hello.txt (acceptance; sandbox workspace-write; env ${(check.env_names as string[]).join(",")})`,
    );
    // Names only: no value of any variable appears.
    expect(inspect.stdout).not.toContain(env.PATH!);

    const json = await runCli(["inspect", "s", "-w", workspace, "--json"], env);
    const timeline = (JSON.parse(json.stdout) as { timeline: { type: string; text: string }[] }).timeline;
    expect(timeline.find((r) => r.type === "process.spawned")?.text).toContain(
      "(shell; sandbox workspace-write; env ",
    );
  });

  it("hostile environment names in a journal shipped by someone else are shown escaped", async () => {
    const env = await userEnv("inspect");
    const workspace = await sessionWithProcesses(env);
    const hostile = "EVIL\u001b]0;pwned\u0007\u202eX";
    // Rewrite the journal as a forger without the key would: inspect still shows it, labelled.
    const path = journalFile(workspace, "s");
    let prev = "0".repeat(64);
    const lines = readFileSync(path, "utf8").split("\n").slice(0, -1);
    const forged = lines.map((line) => {
      const { hash: _hash, mac, ...body } = JSON.parse(line) as Record<string, unknown>;
      const data = body.data as Record<string, unknown>;
      if (body.type === "process.spawned") data.env_names = [hostile];
      if (body.type === "acceptance.checked")
        for (const check of data.checks as Record<string, unknown>[]) check.env_names = [hostile];
      body.prev = prev;
      const hash = digestOf(body);
      prev = hash;
      return canonicalJson({ ...body, hash, mac });
    });
    writeFileSync(path, forged.map((line) => `${line}\n`).join(""));

    const inspect = await runCli(["inspect", "s", "-w", workspace], env);
    expectExit(inspect, 0);
    expect(inspect.stdout).toContain("UNTRUSTED");
    expect(inspect.stdout).not.toContain("\u001b");
    expect(inspect.stdout).not.toContain("\u202e");
    expect(timelineLine(inspect.stdout, /process group/)).toContain("env EVIL\\x1b]0;pwned\\x07\\u202eX)");
    expect(timelineLine(inspect.stdout, /acceptance passed/)).toContain(
      "env EVIL\\x1b]0;pwned\\x07\\u202eX)",
    );
  });
});
