// A deny rule on a program holds where programs run: under `--shell allow --deny
// 'shell(evilprog*)'`, a scripted model reaches evilprog by every other name and way the command
// line does not show (a link, a copy, a wrapper of the link, a script it wrote), each of which the
// rules allow. The sandbox covers the program with a refusing stub: the marker evilprog would
// write never appears, and each call's result reports the refusal. With the sandbox off, `policy
// explain` says the rule is advisory.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  finished,
  jsonScript,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { startHarnessWith } from "./helpers.js";

const RULE = "shell(evilprog*)";
let root: string;
let bin: string;
let marker: string;

beforeAll(() => {
  ensureBuilt();
  // Under /opt: a toolchain directory the sandbox shows, as a program installed there would be.
  root = mkdtempSync("/opt/harness-e2e-deny-");
  bin = join(root, "bin");
  mkdirSync(bin);
  marker = join(root, "marker");
  mkdirSync(marker);
  // Writes into the workspace it runs in (the only place a sandboxed program may write).
  writeFileSync(join(bin, "evilprog"), '#!/bin/sh\necho "evilprog ran" > "$PWD/pwned"\n', { mode: 0o755 });
});

afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  await removeTempDirs();
});

async function userConfig(): Promise<Record<string, string>> {
  const home = await tempDir("harness-home-");
  const config = join(home, "config.json");
  writeFileSync(config, "{}");
  return { HARNESS_CONFIG: config, HOME: home, PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}` };
}

describe("a program a deny rule names cannot run in a sandboxed session, whatever it is called", () => {
  it("links, copies, wrappers of them and scripts reach the stub; the marker is never written", async () => {
    const program = join(bin, "evilprog");
    const attacks: Record<string, string> = {
      symlink: `ln -s ${program} x && ./x`,
      copy: `cp ${program} y && ./y`,
      env: `ln -sf ${program} e && env ./e`,
      flock: `ln -sf ${program} f && flock /tmp/lock ./f`,
      "bash-c": `ln -sf ${program} b && bash -c ./b`,
      script: `printf '%s\\n' ${program} > s.sh && chmod +x s.sh && ./s.sh`,
      hidden: `ln -sf ${program} h && ./h 2>/dev/null; true`,
    };
    const script = await jsonScript([
      ...Object.entries(attacks).map(([id, command]) => ({
        text: id,
        calls: [{ id, name: "shell", arguments: { command } }],
      })),
      // The command line names the program: the rules deny it before anything runs.
      { text: "named", calls: [{ id: "named", name: "shell", arguments: { command: "env evilprog" } }] },
      { text: "done" },
    ]);
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const result = await finished(
      startHarnessWith(
        [
          "run",
          "--script",
          script,
          "-w",
          workspace,
          "--session",
          "deny",
          "--shell",
          "allow",
          "--deny",
          RULE,
          "go",
        ],
        await userConfig(),
      ),
    );
    expect(result.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(existsSync(join(workspace, "pwned"))).toBe(false);
    const results = resultsByCall(await readJournal(workspace, "deny"));
    for (const id of Object.keys(attacks)) {
      const data = results.get(id) as {
        status?: string;
        error_type?: string;
        data?: Record<string, unknown>;
      };
      const refusals = (data.data?.denied_programs ?? []) as { path: string; rule: string }[];
      expect({ id, refusals }).toEqual({ id, refusals: [{ path: program, rule: RULE }] });
      if (id === "hidden") {
        // Its output and exit code hidden, the refusal is still reported.
        expect(data.status).toBe("ok");
      } else {
        expect({ id, status: data.status, type: data.error_type }).toEqual({
          id,
          status: "error",
          type: "SANDBOX_VIOLATION",
        });
        expect(JSON.stringify(data)).toContain("exit code 126");
      }
    }
    expect(results.get("named")?.status).toBe("denied");
  });
});

describe("policy explain says where a deny rule on a program holds", () => {
  const explain = async (sandbox: string[]) =>
    finished(
      startHarnessWith(
        [
          "policy",
          "explain",
          "shell",
          '{"command":"evilprog x"}',
          "-w",
          await workspaceWith({}),
          "--deny",
          RULE,
          ...sandbox,
        ],
        await userConfig(),
      ),
    );

  it("with the sandbox off: advisory, checked on the command line only", async () => {
    const result = await explain(["--sandbox", "off"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("shell: deny");
    expect(result.stdout).toContain(`the sandbox is off, so ${RULE}`);
    expect(result.stdout).toContain(
      "is advisory: deny rules on programs are checked on the command line only",
    );
  });

  it("with the sandbox on: enforced by a stub", async () => {
    const result = await explain([]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${RULE} (cli) is enforced by the sandbox`);
    expect(result.stdout).not.toContain("advisory");
  });
});
