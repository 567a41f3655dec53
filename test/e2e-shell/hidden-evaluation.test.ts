// A rule that allows one command must not also allow code bash evaluates out of sight of the
// command split: array subscripts (which run `$(...)`), arithmetic on a variable's value, and
// `${x@P}`. Each attack runs through the built CLI with a scripted model and only
// `--allow 'shell(touch allowed*)'`; the marker files the hidden commands would create must not exist.
import { chmodSync, existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const ATTACKS: Record<string, string> = {
  declare: "declare 'a[$(touch pwned-declare)]=1'; touch allowed-1",
  unset: "a=(); unset 'a[$(touch pwned-unset)]'; touch allowed-2",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
  prompt: "x='$(touch pwned-prompt)'; touch allowed-3 ${x@P}",
  arithmetic: "x='a[$(touch pwned-arith)]'; touch allowed-4 $((x))",
  // The payload is a file name in the workspace: a glob hands it to arithmetic.
  glob: "for f in *; do touch allowed-5 $((f)); done",
};

describe("a line that sets PATH through a builtin's name operand is not decided by the names it shows", () => {
  it("declare -n, read and printf -v of PATH then an allowed `ls` do not run the workspace's own `ls`", async () => {
    const workspace = await workspaceWith({ "bin/ls": "#!/bin/sh\n/usr/bin/touch pwned-$1\n" });
    chmodSync(join(workspace, "bin/ls"), 0o755);
    const home = await tempDir("harness-home-");
    const config = join(home, "config.json");
    writeFileSync(config, "{}");
    const attacks: Record<string, string> = {
      nameref: `declare -n r=PATH; r=${workspace}/bin; ls nameref`,
      read: `read PATH <<< ${workspace}/bin; ls read`,
      printf: `printf -v PATH %s ${workspace}/bin; ls printf`,
    };
    const script = await jsonScript([
      ...Object.entries(attacks).map(([id, command]) => ({
        text: id,
        calls: [{ id, name: "shell", arguments: { command } }],
      })),
      { text: "done" },
    ]);
    const result = await finished(
      startHarnessWith(
        [
          "run",
          "--script",
          script,
          "-w",
          workspace,
          "--session",
          "path",
          "--allow",
          "shell(ls*)",
          "--allow",
          "shell(read *)",
          "--allow",
          "shell(printf *)",
          "go",
        ],
        { HARNESS_CONFIG: config, HOME: home },
      ),
    );
    // Every line was denied: the run stops rather than ending unverified.
    expectExit(result, 2);
    expect(result.stdout).toMatch(/^status +stopped \(changes_denied\)$/m);
    const results = resultsByCall(await readJournal(workspace, "path"));
    expect(readdirSync(workspace).filter((name) => name.startsWith("pwned"))).toEqual([]);
    for (const id of Object.keys(attacks)) expect(results.get(id)?.status, id).toBe("denied");
  });
});

describe("code hidden in subscripts, arithmetic and prompt expansion is not allowed by a rule for another command", () => {
  it("each hidden command is refused before anything runs; the allowed command alone still runs", async () => {
    const workspace = await workspaceWith({ "a[$(touch pwned-glob)]": "" });
    const home = await tempDir("harness-home-");
    const config = join(home, "config.json");
    writeFileSync(config, "{}");
    const calls = Object.entries(ATTACKS).map(([id, command]) => ({
      id,
      name: "shell",
      arguments: { command },
    }));
    const script = await jsonScript([
      ...calls.map((call) => ({ text: call.id, calls: [call] })),
      {
        text: "control",
        calls: [{ id: "control", name: "shell", arguments: { command: "touch allowed-control" } }],
      },
      { text: "done" },
    ]);
    const result = await finished(
      startHarnessWith(
        [
          "run",
          "--script",
          script,
          "-w",
          workspace,
          "--session",
          "hidden",
          "--allow",
          "shell(touch allowed*)",
          "go",
        ],
        { HARNESS_CONFIG: config, HOME: home },
      ),
    );
    expectExit(result, 0);
    const results = resultsByCall(await readJournal(workspace, "hidden"));
    for (const id of Object.keys(ATTACKS)) {
      expect(results.get(id)?.status, id).toBe("denied");
    }
    expect(results.get("control")?.status).toBe("ok");
    const files = readdirSync(workspace)
      .filter((name) => name !== ".harness")
      .sort();
    expect(files.filter((name) => name.startsWith("pwned"))).toEqual([]);
    expect(files).toEqual(["a[$(touch pwned-glob)]", "allowed-control"]);
    expect(existsSync(join(workspace, "allowed-1"))).toBe(false);
  });
});
