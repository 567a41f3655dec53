import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ArtifactStore } from "../src/artifacts/store.js";
import { createShellTool } from "../src/tools/shell/shell.js";
import type { ToolContext } from "../src/tools/tool.js";
import type { WorkspaceFs } from "../src/workspace/fs.js";

export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

const RUNS = 20;

/**
 * What the shell tool costs per call: `true` run through the tool with the bwrap sandbox, through
 * the tool without a sandbox, and by a bare child_process.spawn. Runs are interleaved so that
 * machine noise hits all three alike; medians of RUNS each.
 */
export async function benchShell(): Promise<BenchResult[]> {
  const workspace = mkdtempSync(path.join(tmpdir(), "bench-shell-"));
  try {
    const sandboxed = createShellTool({ sandbox: { profile: "workspace-write" } });
    const unsandboxed = createShellTool({ sandbox: { profile: "none" } });
    const context = benchContext(workspace);
    // Warm up: module loading, the sandbox probe (cached per process), shell lookup.
    await sandboxed.execute({ command: "true" }, context);
    await unsandboxed.execute({ command: "true" }, context);
    await bareSpawn();

    const times = { bare: [] as number[], none: [] as number[], bwrap: [] as number[] };
    for (let run = 0; run < RUNS; run++) {
      times.bare.push(await timed(bareSpawn));
      times.none.push(await timed(() => unsandboxed.execute({ command: "true" }, context)));
      times.bwrap.push(await timed(() => sandboxed.execute({ command: "true" }, context)));
    }
    const bare = median(times.bare);
    const none = median(times.none);
    const bwrap = median(times.bwrap);
    const note = `median of ${RUNS}`;
    return [
      { name: "shell.spawn_true.bare", value: round(bare), unit: "ms", note },
      { name: "shell.tool_true.unsandboxed", value: round(none), unit: "ms", note },
      { name: "shell.tool_true.bwrap", value: round(bwrap), unit: "ms", note },
      { name: "shell.ratio.unsandboxed_vs_bare", value: round(none / bare), unit: "x" },
      { name: "shell.ratio.bwrap_vs_bare", value: round(bwrap / bare), unit: "x" },
      { name: "shell.ratio.bwrap_vs_unsandboxed", value: round(bwrap / none), unit: "x" },
    ];
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

function bareSpawn(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("true", { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve());
  });
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await action();
  return performance.now() - start;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** `true` prints nothing, so the artifact store is never written; it only has to exist. */
function benchContext(hostRoot: string): ToolContext {
  const artifacts: ArtifactStore = {
    read: async () => undefined,
    put: async () => {
      throw new Error("the benchmark stores no artifacts");
    },
    open: async () => {
      throw new Error("the benchmark stores no artifacts");
    },
  };
  return {
    callId: "bench",
    signal: new AbortController().signal,
    fs: {} as WorkspaceFs,
    observedVersion: () => undefined,
    artifacts,
    hostRoot,
  };
}
