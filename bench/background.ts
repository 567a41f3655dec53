// Background processes (issue 34): how long after a process says it is ready (a log line, a port
// listening inside the sandbox) the `shell` call returns, beside a plain shell call; and what the
// per-turn workspace comparison that records a background process's writes costs on a
// 10,000-file workspace.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import type { AnyNewEvent } from "../src/journal/vocabulary.js";
import { WorkspaceEffects } from "../src/runtime/workspace-effects.js";
import { BackgroundProcesses } from "../src/tools/shell/background.js";
import { createShellTool } from "../src/tools/shell/shell.js";
import type { ToolContext } from "../src/tools/tool.js";
import type { WorkspaceFs } from "../src/workspace/fs.js";
import { TreeSnapshot } from "../src/workspace/tree-snapshot.js";
import { type BenchRow, median, round } from "./stats.js";

const RUNS = 7;
const FILES = 10_000;

function context(hostRoot: string, callId: string): ToolContext {
  return {
    callId,
    signal: new AbortController().signal,
    fs: {} as WorkspaceFs,
    observedVersion: () => undefined,
    artifacts: new MemoryArtifactStore(),
    hostRoot,
  };
}

/** ms from the moment the process printed its marker (its own clock) to the call's return. */
async function readiness(kind: "log" | "port" | "plain", root: string, run: number): Promise<number> {
  const registry = new BackgroundProcesses({ graceMs: 200 });
  const tool = createShellTool({ sandbox: { profile: "workspace-write" }, background: registry });
  const port = 30_000 + ((process.pid + run * 7) % 20_000);
  const ctx = context(root, `b${kind}${run}`);
  try {
    if (kind === "plain") {
      const start = performance.now();
      await tool.execute({ command: "true" }, ctx);
      return performance.now() - start;
    }
    const command =
      kind === "log"
        ? `sleep 0.2; echo "READY $(date +%s%3N)"; sleep 30`
        : `node -e "require('net').createServer().listen(${port}, '127.0.0.1', () => console.log('AT ' + Date.now())); setInterval(() => {}, 1000)"`;
    const output = await tool.execute(
      { command, background: true, ready: kind === "log" ? { log: "^READY" } : { port } },
      ctx,
    );
    const returned = Date.now();
    const id = String(output.data?.process_id);
    // The marker may arrive just after readiness (a port listens before the callback prints).
    let printed: number | undefined;
    for (let wait = 0; printed === undefined && wait < 100; wait++) {
      const text = registry.output(id, 0, 4096)?.text ?? "";
      const match = /(?:READY|AT) (\d+)/.exec(text);
      if (match) printed = Number(match[1]);
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (printed === undefined) throw new Error(`no marker in the ${kind} process's output`);
    return Math.max(0, returned - printed);
  } finally {
    await registry.closeSession();
  }
}

/** A 10,000-file workspace in 100 directories. */
function workspaceTree(): string {
  const root = mkdtempSync(path.join(tmpdir(), "harness-bench-background-"));
  for (let d = 0; d < 100; d++) {
    const dir = path.join(root, `d${d}`);
    mkdirSync(dir);
    for (let f = 0; f < FILES / 100; f++) writeFileSync(path.join(dir, `f${f}.txt`), `file ${d}/${f}\n`);
  }
  return root;
}

/** ms per turn-end comparison (a background process owns what changed), unchanged or one file written. */
async function turnEndComparisons(root: string, stateDir: string, write: boolean): Promise<number[]> {
  const owners = { effectsOwner: () => "s1", effectsCompared: () => undefined };
  const effects = new WorkspaceEffects(
    new TreeSnapshot({ root, stateDir }),
    new MemoryArtifactStore(),
    undefined,
    owners,
  );
  const journaled: AnyNewEvent[] = [];
  const journal = {
    record: async (events: AnyNewEvent[]) => void journaled.push(...events),
    nextSeq: () => 0,
  };
  await effects.start([], journal);
  const times: number[] = [];
  try {
    for (let run = 0; run < RUNS; run++) {
      if (write) writeFileSync(path.join(root, "d0", "watcher.txt"), `run ${run}\n`);
      const start = performance.now();
      await effects.outside(journal);
      times.push(performance.now() - start);
    }
  } finally {
    effects.close();
    rmSync(path.join(root, "d0", "watcher.txt"), { force: true });
  }
  const changes = journaled.filter((event) => event.type === "workspace.changed").length;
  if (changes !== (write ? RUNS : 0)) throw new Error(`expected ${write ? RUNS : 0} changes, got ${changes}`);
  return times;
}

export async function benchBackground(): Promise<BenchRow[]> {
  const scratch = mkdtempSync(path.join(tmpdir(), "harness-bench-bg-run-"));
  const root = workspaceTree();
  const stateDir = mkdtempSync(path.join(tmpdir(), "harness-bench-bg-state-"));
  try {
    await readiness("plain", scratch, 0);
    const times = { plain: [] as number[], log: [] as number[], port: [] as number[] };
    for (let run = 1; run <= RUNS; run++) {
      times.plain.push(await readiness("plain", scratch, run));
      times.log.push(await readiness("log", scratch, run));
      times.port.push(await readiness("port", scratch, run));
    }
    const unchanged = await turnEndComparisons(root, stateDir, false);
    const oneFile = await turnEndComparisons(root, stateDir, true);
    const note = `median of ${RUNS}, bwrap sandbox`;
    return [
      { name: "background.plain_shell_true", value: round(median(times.plain), 2), unit: "ms", note },
      {
        name: "background.ready_log.latency",
        value: round(median(times.log), 2),
        unit: "ms",
        note: `${note}; printed → returned`,
      },
      {
        name: "background.ready_port.latency",
        value: round(median(times.port), 2),
        unit: "ms",
        note: `${note}; listening → returned (25 ms poll)`,
      },
      {
        name: "background.turn_end_compare.unchanged_10k",
        value: round(median(unchanged), 2),
        unit: "ms",
        note: `median of ${RUNS}, ${FILES} files`,
      },
      {
        name: "background.turn_end_compare.one_write_10k",
        value: round(median(oneFile), 2),
        unit: "ms",
        note: `median of ${RUNS}, ${FILES} files`,
      },
    ];
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
}
