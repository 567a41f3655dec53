import { readdirSync, readFileSync } from "node:fs";
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
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A background process on a pseudo-terminal (`pty: true`) through the built CLI with a scripted
 * model: it prompts, the model types an answer with process_input, the program acts on it inside
 * the sandbox, and the turn's end stops it with nothing left. A process without a terminal is
 * refused input.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

async function config(): Promise<string> {
  const file = join(await tempDir("harness-config-"), "config.json");
  await writeFile(file, "{}");
  return file;
}

/** A unique number to find a command's processes by on the host. */
function token(): string {
  return `${40_000 + Math.floor(Math.random() * 20_000)}.${Math.floor(Math.random() * 1000)}`;
}

/** Host processes whose command line holds `needle`. */
function liveWith(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (/\) Z /.test(stat)) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(needle)) found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

async function run(workspace: string, replies: unknown[]) {
  const script = await jsonScript(replies);
  const result = await finished(
    startHarness(["run", "--script", script, "--workspace", workspace, "--shell", "allow", "--json", "go"], {
      env: { ...childEnv(), HARNESS_CONFIG: await config() },
    }),
  );
  const summary = jsonSummary(result);
  const journal = await readJournal(workspace, String(summary.session));
  return { result, journal };
}

const shell = (id: string, args: Record<string, unknown>) => ({ id, name: "shell", arguments: args });

/** A foreground command that waits (bounded) until `file` has content, then prints it. */
const waitFor = (file: string) =>
  `for i in $(seq 200); do [ -s ${file} ] && break; sleep 0.05; done; cat ${file}`;

describe("a background process on a terminal", () => {
  it("prompts, takes what process_input types, acts on it, and leaves no survivor", async () => {
    const workspace = await workspaceWith({});
    const mark = token();
    // `[ -t 0 ]` proves stdin is a terminal: without one it answers "no tty".
    const command = `[ -t 0 ] || { echo "no tty"; exit 7; }; printf "name? "; read n; echo "hello $n" > answer.txt; echo "hello $n"; sleep ${mark}`;
    const { result, journal } = await run(workspace, [
      { calls: [shell("s1", { command, background: true, pty: true, ready: { log: "name\\?" } })] },
      { calls: [{ id: "i1", name: "process_input", arguments: { id: "bg-s1", text: "bob\n" } }] },
      { calls: [shell("w1", { command: waitFor("answer.txt") })] },
      { calls: [{ id: "o1", name: "process_output", arguments: { id: "bg-s1" } }] },
      { text: "done" },
    ]);
    expectExit(result, 0);
    const results = resultsByCall(journal);
    expect(results.get("s1")).toMatchObject({ status: "ok", data: { process_id: "bg-s1", pty: true } });
    expect(results.get("i1")).toMatchObject({ status: "ok", data: { process_id: "bg-s1", bytes: 4 } });
    expect(String(results.get("w1")?.content)).toContain("hello bob");
    expect(readFileSync(join(workspace, "answer.txt"), "utf8")).toBe("hello bob\n");
    const output = String(results.get("o1")?.content);
    expect(output).toContain("name? ");
    expect(output).toContain("hello bob");
    expect(output).not.toContain("no tty");
    // process_input is a call like any other: decided and journaled as one.
    const typed = ofType(journal, "tool.started").find((r) => r.data.call_id === "i1");
    expect(typed?.data).toMatchObject({
      name: "process_input",
      effect: "process_execution",
      arguments: { id: "bg-s1", text: "bob\n" },
    });
    const [started] = ofType(journal, "process.started");
    expect(started?.data).toMatchObject({ process_id: "bg-s1", pty: true, sandboxed: true });
    const stopped = ofType(journal, "process.stopped");
    expect(stopped).toHaveLength(1);
    expect(stopped[0]?.data).toMatchObject({ process_id: "bg-s1", reason: "turn_end", survivors: 0 });
    expect(Number(stopped[0]?.data.killed)).toBeGreaterThan(0);
    expect(liveWith(mark)).toEqual([]);
  }, 90_000);

  it("refuses process_input to a process without a terminal, and types nothing into it", async () => {
    const workspace = await workspaceWith({});
    const mark = token();
    // Whatever reached its stdin would land in got.txt.
    const command = `cat >> got.txt & echo READY; sleep ${mark}`;
    const { result, journal } = await run(workspace, [
      { calls: [shell("s1", { command, background: true, ready: { log: "READY" } })] },
      { calls: [{ id: "i1", name: "process_input", arguments: { id: "bg-s1", text: "bob\n" } }] },
      { text: "done" },
    ]);
    expectExit(result, 0);
    const results = resultsByCall(journal);
    expect(results.get("s1")).toMatchObject({ status: "ok", data: { pty: false } });
    expect(results.get("i1")).toMatchObject({ status: "invalid", error_type: "SEMANTIC_VALIDATION_ERROR" });
    expect(String(results.get("i1")?.content)).toContain("was not started with pty: true");
    expect(readFileSync(join(workspace, "got.txt"), "utf8")).toBe("");
    expect(ofType(journal, "process.stopped")[0]?.data).toMatchObject({ survivors: 0 });
    expect(liveWith(mark)).toEqual([]);
  }, 90_000);
});
