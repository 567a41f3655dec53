import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tempDir, workspaceWith } from "../e2e/helpers.js";
import { cliEnv } from "../e2e-providers/cli.js";

/**
 * One long task for the long-session proofs: a model that reads ten data files in turn, STEPS
 * times, then writes done.txt, which the acceptance command checks. Each read returns about
 * 1.2 KB, so with a 4000-token window old results are pruned every few steps and the history
 * is compacted every few more. The scripted model appends every request it receives (with its
 * step and whether it asked for a summary) as one JSON line to a log outside the workspace.
 */

export const STEPS = 300;
export const WINDOW = 4000;
/** The default reply reserve for a 4000-token window (a quarter of it). */
export const RESERVE = 1000;
export const SESSION = "long";
export const GOAL = `read the ten data parts in turn ${STEPS} times, then write done.txt`;
export const AGENTS_MD =
  "# Project rules\n- Never edit files under data/.\n- Write the report to done.txt.\n";
export const DONE_TEXT = `read ${STEPS} parts`;
export const ACCEPT = `grep -qx '${DONE_TEXT}' done.txt`;
export const COMPACTION_MARKER = "[harness: context compaction]";

const SUMMARY_HEAD = "Goal: read the data parts, then write done.txt.\nProgress: ";
const SUMMARY_TAIL = " reads done.\nNext steps: keep reading, then write done.txt.";

/** The summary the model writes when asked at `step` (the same whoever asks). */
export function summaryAt(step: number): string {
  return `${SUMMARY_HEAD}${step}${SUMMARY_TAIL}`;
}

/**
 * The step a model is at, from the id of the last call it made (undefined: none yet): for a model
 * that sees only the conversation (a server), not the step harness counts.
 */
export function stepAfter(lastCallId: string | undefined): number {
  if (lastCallId === undefined) return 0;
  return lastCallId === "write" ? STEPS + 1 : Number(lastCallId.slice(1)) + 1;
}

/** What the model does at `step`: the same as the scripted model's answer. */
export function moveAt(
  step: number,
):
  | { kind: "read"; id: string; path: string }
  | { kind: "write"; id: string; content: string }
  | { kind: "done" } {
  if (step < STEPS) return { kind: "read", id: `r${step}`, path: `data/part-${step % 10}.txt` };
  if (step === STEPS) return { kind: "write", id: "write", content: `${DONE_TEXT}\n` };
  return { kind: "done" };
}

export async function longWorkspace(): Promise<string> {
  const files: Record<string, string> = { "AGENTS.md": AGENTS_MD };
  for (let part = 0; part < 10; part++) {
    const lines = Array.from(
      { length: 16 },
      (_, i) => `part ${part} line ${i}: ${String.fromCharCode(97 + part).repeat(48)}`,
    );
    files[`data/part-${part}.txt`] = `${lines.join("\n")}\n`;
  }
  return workspaceWith(files);
}

/**
 * The scripted model as an .mjs module. It answers from the step harness passes, so it is the
 * same model however often a session is interrupted. While the file `hold` holds "summary"
 * (or "step"), the next summary (or ordinary) request is held: the script creates `holding` and
 * waits, up to 20 s, for `hold` to go. A window in which a test can kill the CLI with such a
 * request in flight, whatever the load.
 */
export async function longScript(): Promise<{ script: string; log: string; hold: string; holding: string }> {
  const dir = await tempDir("harness-long-script-");
  const log = join(dir, "requests.jsonl");
  const script = join(dir, "long.mjs");
  const hold = join(dir, "hold");
  const holding = join(dir, "holding");
  await writeFile(
    script,
    `import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
const STEPS = ${STEPS};
export default async function (messages, step) {
  const compaction = String(messages[messages.length - 1].content).startsWith(${JSON.stringify(COMPACTION_MARKER)});
  appendFileSync(${JSON.stringify(log)}, JSON.stringify({ step, compaction, messages }) + "\\n");
  const wanted = existsSync(${JSON.stringify(hold)}) ? readFileSync(${JSON.stringify(hold)}, "utf8") : "";
  if (wanted === (compaction ? "summary" : "step")) {
    writeFileSync(${JSON.stringify(holding)}, String(step));
    for (let waited = 0; existsSync(${JSON.stringify(hold)}) && waited < 20000; waited += 5) await sleep(5);
  }
  if (compaction) {
    return { text: ${JSON.stringify(SUMMARY_HEAD)} + step + ${JSON.stringify(SUMMARY_TAIL)} };
  }
  if (step < STEPS) return { calls: [{ id: "r" + step, name: "read_file", arguments: { path: "data/part-" + (step % 10) + ".txt" } }] };
  if (step === STEPS) return { calls: [{ id: "write", name: "write_file", arguments: { path: "done.txt", content: ${JSON.stringify(`${DONE_TEXT}\n`)} } }] };
  return { text: "finished" };
}
`,
  );
  await writeFile(log, "");
  return { script, log, hold, holding };
}

export interface LoggedRequest {
  step: number;
  compaction: boolean;
  messages: { role: string; content: string; calls?: unknown[] }[];
  /** The line exactly as the script wrote it. */
  raw: string;
}

export async function loggedRequests(log: string): Promise<LoggedRequest[]> {
  return (await readFile(log, "utf8"))
    .split("\n")
    .filter(Boolean)
    .map((raw) => ({ ...(JSON.parse(raw) as Omit<LoggedRequest, "raw">), raw }));
}

/** An environment with an empty HOME and an empty user config file (never the real one). */
export async function longEnv(): Promise<NodeJS.ProcessEnv> {
  const home = await tempDir("harness-long-home-");
  const config = join(home, "config.json");
  await writeFile(config, "{}");
  return cliEnv(home, { HARNESS_CONFIG: config });
}

/** `harness run` of the long task (the same arguments start it and resume it). */
export function longRunArgs(workspace: string, model: string[]): string[] {
  return [
    "run",
    ...model,
    ...["--workspace", workspace, "--write", "allow", "--tools", "read_file,write_file"],
    ...["--context-window", String(WINDOW), "--max-model-requests", "5000", "--max-tool-calls", "1000"],
    ...["--accept", ACCEPT, "--session", SESSION, "--json", GOAL],
  ];
}
