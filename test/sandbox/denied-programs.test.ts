import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { planDenials } from "../../src/sandbox/denied-programs.js";
import { Executor } from "../../src/sandbox/executor.js";
import { tempDirectory } from "../shell/helpers.js";

/*
 * A denied program is installed where the sandbox shows it (under /opt, a toolchain directory),
 * with a hard link under another name and a symbolic link in a second PATH directory. Run for
 * real, it writes a marker into the workspace. Under the sandbox with a deny rule naming it, no
 * way of reaching it (its name, the links, a new link or a copy made inside, a wrapper, a
 * script) writes the marker: each reaches the stub, which refuses with exit 126.
 */

let root: string;
let bin: string;
let otherBin: string;
let workspace: { dir: string; cleanup: () => void };
let marker: string;
const RULE = "shell(evilprog*)";

beforeAll(() => {
  root = mkdtempSync("/opt/harness-deny-");
  bin = path.join(root, "bin");
  otherBin = path.join(root, "other");
  mkdirSync(bin);
  mkdirSync(otherBin);
  workspace = tempDirectory("denied-programs-ws-");
  marker = path.join(workspace.dir, "evilprog-ran");
  writeFileSync(path.join(bin, "evilprog"), `#!/bin/sh\necho ran >> ${marker}\n`, { mode: 0o755 });
  linkSync(path.join(bin, "evilprog"), path.join(bin, "hardname"));
  symlinkSync(path.join(bin, "evilprog"), path.join(otherBin, "softname"));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  workspace.cleanup();
});

const executor = () =>
  new Executor({
    environment: { PATH: `${bin}:${otherBin}:/usr/bin:/bin`, HOME: "/nonexistent", LANG: "C" },
  });

function run(command: string, denied: boolean) {
  const sandbox = new BwrapSandbox("workspace-write", undefined, {
    ...(denied ? { deniedPrograms: [{ name: "evilprog*", rule: RULE }] } : {}),
  });
  return executor().execute({
    purpose: "shell",
    argv: ["/bin/bash", "-c", command],
    workspace: workspace.dir,
    profile: { sandbox, env: {} },
    timeoutMs: 20_000,
  });
}

describe("a program a deny rule names is unreachable in the sandbox", () => {
  it("finds the program's file, its hard links and not the shell", () => {
    const plan = planDenials([{ name: "evilprog*", rule: RULE }], {
      searchPath: `${bin}:${otherBin}`,
      visible: [],
      shell: "/bin/bash",
    });
    expect(plan.files.map((file) => file.path).sort()).toEqual(
      [path.join(bin, "evilprog"), path.join(bin, "hardname")].sort(),
    );
    const shell = planDenials([{ name: "bash", rule: "shell(bash*)" }], {
      searchPath: "/usr/bin",
      visible: [],
      shell: "/bin/bash",
    });
    expect(shell.files).toEqual([]);
    expect(shell.skipped[0]?.reason).toContain("shell");
  });

  it("without the rule, the program runs (the marker is written)", async () => {
    rmSync(marker, { force: true });
    const result = await run("evilprog", false);
    expect(result.exitCode).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });

  it.each([
    ["its name", "evilprog"],
    ["its path", `${"BIN"}/evilprog`],
    ["a hard link under another name", "hardname"],
    ["a symbolic link on PATH", "softname"],
    ["a new symbolic link", 'ln -s "$(command -v evilprog)" x && ./x'],
    ["a copy", 'cp "$(command -v evilprog)" y && ./y'],
    ["env", "env evilprog"],
    ["flock", "flock /tmp/lock evilprog"],
    ["bash -c", "bash -c evilprog"],
    ["a script written first", "printf 'evilprog\\n' > s.sh && bash s.sh"],
    ["a pattern", `${"BIN"}/evilpro?`],
    ["find -exec", `find ${"BIN"} -name evilprog -exec {} \\;`],
    ["xargs", "echo evilprog | xargs env"],
  ])("%s reaches the stub: refused, exit 126, nothing ran", async (_how, template) => {
    rmSync(marker, { force: true });
    const command = template.replaceAll("BIN", bin);
    const result = await run(command, true);
    expect({ command, ran: existsSync(marker) }).toEqual({ command, ran: false });
    // find ignores the exit code of -exec ... ;, xargs reports a failed command as 123.
    expect(result.exitCode).toBe(command.startsWith("find") ? 0 : command.includes("xargs") ? 123 : 126);
    expect(`${result.stderr.head}${result.stderr.tail}`).toContain(`is denied by the rule ${RULE}`);
    expect(result.refused?.[0]?.rule).toBe(RULE);
    rmSync(path.join(workspace.dir, "x"), { force: true });
    rmSync(path.join(workspace.dir, "y"), { force: true });
    rmSync(path.join(workspace.dir, "s.sh"), { force: true });
  });

  it("a copy in a workspace directory on PATH is covered too; a data file of a matching name is not", async () => {
    const tools = path.join(workspace.dir, "tools");
    mkdirSync(tools, { recursive: true });
    writeFileSync(path.join(tools, "evilprog-local"), `#!/bin/sh\necho ran >> ${marker}\n`, { mode: 0o755 });
    writeFileSync(path.join(tools, "evilprog-notes.txt"), "notes\n");
    rmSync(marker, { force: true });
    const sandbox = new BwrapSandbox("workspace-write", undefined, {
      deniedPrograms: [{ name: "evilprog*", rule: RULE }],
    });
    const result = await new Executor({
      environment: { PATH: `${tools}:/usr/bin:/bin`, HOME: "/nonexistent", LANG: "C" },
    }).execute({
      purpose: "shell",
      argv: ["/bin/bash", "-c", "cat tools/evilprog-notes.txt; evilprog-local"],
      workspace: workspace.dir,
      profile: { sandbox, env: {} },
      timeoutMs: 20_000,
    });
    expect(existsSync(marker)).toBe(false);
    expect(result.stdout.head).toBe("notes\n");
    expect(result.exitCode).toBe(126);
    expect(result.refused).toEqual([{ path: path.join(tools, "evilprog-local"), rule: RULE }]);
    rmSync(tools, { recursive: true, force: true });
  });

  it("a refusal is seen even when the command hides its output and exit code", async () => {
    rmSync(marker, { force: true });
    const result = await run("evilprog 2>/dev/null || true", true);
    expect(result.exitCode).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(result.refused).toEqual([{ path: path.join(bin, "evilprog"), rule: RULE }]);
  });
});
