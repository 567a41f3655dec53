import { existsSync, readdirSync, readFileSync } from "node:fs";
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
  readJournal,
  removeTempDirs,
  resultsByCall,
  sessionDir,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A model's shell command that leaves something behind, and one that looks for harness's secrets
 * beyond its own environment. A daemon (setsid, a double fork, nohup) that outlived its call
 * could change files after acceptance ran and the session said `verified`; the provider key and
 * harness's tokens could be read from harness's own /proc/PID/environ.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const KEY = "sk-attack-5d2e9b7c41a6f308";
const SERVER_TOKEN = "harness-server-token-7f3a9c2e81";

async function config(): Promise<string> {
  const file = join(await tempDir("harness-config-"), "config.json");
  await writeFile(file, "{}");
  return file;
}

/** Host processes whose command line holds `token` (a unique sleep duration). */
function liveWith(token: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").includes(token))
        found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

describe("a daemon started by a shell call", () => {
  it("does not survive the call: nothing changes after acceptance passed and the run said verified", async () => {
    const outside = await tempDir("harness-outside-");
    const workspace = await workspaceWith({ "notes.txt": "before\n" });
    const token = `${7000 + Math.floor(Math.random() * 1000)}.123`;
    const late = (name: string) =>
      `sleep 2; echo late > ${name}.txt; echo late > ${join(outside, name)}; sleep ${token}`;
    const command = [
      `setsid sh -c '${late("setsid")}' </dev/null >/dev/null 2>&1 &`,
      `(sh -c '${late("double")}' </dev/null >/dev/null 2>&1 &) &`,
      `nohup sh -c '${late("nohup")}' </dev/null >/dev/null 2>&1 &`,
      "echo launched",
    ].join("\n");
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command } }] },
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
        "true",
        "--json",
        "go",
      ],
      { env: { ...childEnv(), HARNESS_CONFIG: await config() } },
    );
    const result = await finished(child);
    expectExit(result, 0);
    expect(jsonSummary(result)).toMatchObject({ status: "verified" });
    const results = resultsByCall(await readJournal(workspace, String(jsonSummary(result).session)));
    expect(results.get("s1")).toMatchObject({ status: "ok" });
    // Each daemon would write after 2 s; wait past that.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    for (const name of ["setsid", "double", "nohup"]) {
      expect(existsSync(join(workspace, `${name}.txt`))).toBe(false);
      expect(existsSync(join(outside, name))).toBe(false);
    }
    expect(readFileSync(join(workspace, "notes.txt"), "utf8")).toBe("before\n");
    expect(liveWith(token)).toEqual([]);
  }, 60_000);
});

describe("harness's secrets seen from a shell call", () => {
  it("are in no environment the command can read: its own, any /proc/PID/environ, its parent's", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    const command = [
      "env",
      'for f in /proc/[0-9]*/environ /proc/self/environ; do echo "== $f"; tr "\\0" "\\n" < "$f"; done 2>&1',
      'echo "== parent $PPID"; tr "\\0" "\\n" < /proc/$PPID/environ 2>&1',
      "ls /proc | tr '\\n' ' '",
    ].join("\n");
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command } }] },
      { text: "done" },
    ]);
    const env = {
      ...childEnv(),
      HARNESS_CONFIG: await config(),
      OPENAI_API_KEY: KEY,
      HARNESS_SERVER_TOKEN: SERVER_TOKEN,
    };
    const result = await finished(
      startHarness(
        ["run", "--script", script, "--workspace", workspace, "--shell", "allow", "--json", "go"],
        {
          env,
        },
      ),
    );
    expectExit(result, 0);
    const session = String(jsonSummary(result).session);
    const results = resultsByCall(await readJournal(workspace, session));
    expect(results.get("s1")).toMatchObject({ status: "ok" });
    // Everything the call produced, as recorded (journal and artifacts) and printed.
    const recorded = [
      readFileSync(join(sessionDir(workspace, session), "events.jsonl"), "utf8"),
      ...readdirSync(join(sessionDir(workspace, session), "artifacts")).map((name) =>
        readFileSync(join(sessionDir(workspace, session), "artifacts", name), "utf8"),
      ),
      result.stdout,
      result.stderr,
    ].join("\n");
    // The command did run and list its own environment...
    expect(recorded).toContain("PATH=");
    // ...but the secrets were never there to scrub: neither the values nor their names.
    for (const secret of [KEY, SERVER_TOKEN, "OPENAI_API_KEY", "HARNESS_SERVER_TOKEN", "[redacted:"]) {
      expect(recorded).not.toContain(secret);
    }
  }, 60_000);
});
