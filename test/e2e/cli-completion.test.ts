import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, harness, removeTempDirs, tempDir } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** Source the printed bash script and ask it to complete `words` (the last one is being typed). */
function completeInBash(script: string, words: string[]): string[] {
  const program = [
    `source ${JSON.stringify(script)}`,
    `COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")})`,
    `COMP_CWORD=${words.length - 1}`,
    "_harness",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash expansion, not a template
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join("\n");
  const result = spawnSync("bash", ["--norc", "--noprofile", "-c", program], { encoding: "utf8" });
  expect(result.stderr).toBe("");
  return result.stdout.split("\n").filter((line) => line.length > 0);
}

describe("harness completion", () => {
  it("bash: 'harness ru' completes to run, and a command's flags complete from its own table", async () => {
    const printed = await harness(["completion", "bash"]);
    expect(printed.code).toBe(0);
    const script = join(await tempDir(), "harness.bash");
    await writeFile(script, printed.stdout);
    expect(completeInBash(script, ["harness", "ru"])).toEqual(["run"]);
    expect(completeInBash(script, ["harness", "ses"])).toEqual(["sessions"]);
    expect(completeInBash(script, ["harness", "run", "--wor"])).toEqual(["--workspace"]);
    expect(completeInBash(script, ["harness", "run", "--max-"])).toEqual([
      "--max-cost-usd",
      "--max-model-requests",
      "--max-tool-calls",
    ]);
    expect(completeInBash(script, ["harness", "sessions", "--j"])).toEqual(["--json"]);
    // A goal or a file: left to bash's own completion.
    expect(completeInBash(script, ["harness", "run", "fix"])).toEqual([]);
  });

  it("zsh and fish scripts name every command and its flags", async () => {
    const zsh = await harness(["completion", "zsh"]);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout.startsWith("#compdef harness\n")).toBe(true);
    expect(zsh.stdout).toContain("'run:run an agent on a goal in a workspace'");
    expect(zsh.stdout).toMatch(/ {4}run\) flags=\([^)]*--workspace/);
    const fish = await harness(["completion", "fish"]);
    expect(fish.stdout).toContain("complete -c harness -f -n __fish_use_subcommand -a run -d ");
    expect(fish.stdout).toContain("complete -c harness -n '__fish_seen_subcommand_from run' -l workspace");
    // Quotes inside a summary stay inside the word.
    expect(fish.stdout).toContain("stopped session\\'s");
  });

  it("an unknown shell is a usage error naming the choices", async () => {
    const result = await harness(["completion", "tcsh"]);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("harness completion bash|zsh|fish");
  });
});
