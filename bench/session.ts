import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import type { EngineListener } from "../src/engine/options.js";
import { FileJournalBackend } from "../src/journal/file-store.js";
import { MemoryJournalBackend } from "../src/journal/memory-store.js";
import type { JournalBackend } from "../src/journal/store.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { sha256Hex } from "../src/shared/hash.js";
import { createFileTools } from "../src/tools/builtin.js";
import { DiskWorkspaceFs } from "../src/workspace/disk-fs.js";
import { type BenchRow, median, round } from "./stats.js";

const STEPS = 200;

/** One scripted session of `steps` read_file steps; returns per-step wall times (ms). */
async function timedSession(root: string, backend: JournalBackend, session: string): Promise<number[]> {
  const registry = new ToolRegistry();
  for (const tool of createFileTools()) registry.register(tool);
  const policy = modePolicy({ write: "allow" });
  const stamps: number[] = [];
  const listener: EngineListener = {
    record(record) {
      if (record.type === "model.started") stamps.push(performance.now());
    },
  };
  const provider = ScriptedProvider.fromFunction(
    (_m, step) =>
      step < STEPS
        ? { calls: [{ id: `r${step}`, name: "read_file", arguments: { path: "src/file.ts", limit: 20 } }] }
        : { text: "done" },
    "bench",
  );
  const engine = new Engine({
    sessionId: session,
    backend,
    provider,
    runtime: {
      snapshot: registry.snapshot(),
      fs: await DiskWorkspaceFs.create(root),
      hostRoot: root,
      artifacts: new MemoryArtifactStore(),
      approver: { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) },
    },
    workspace: { name: "bench", fingerprint: sha256Hex(root) },
    goal: "read a file 200 times",
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: [],
    // A window no 200-step history outgrows: this measures step cost, not context management.
    limits: { maxModelRequests: STEPS + 5, maxToolCalls: STEPS + 5, contextWindowTokens: 10_000_000 },
    mode: "new",
    harnessVersion: "bench",
    listener,
  });
  const summary = await engine.run();
  if (summary.tool_calls !== STEPS) throw new Error(`bench session ended early: ${summary.status}`);
  return stamps.slice(1).map((t, i) => t - stamps[i]!);
}

/** (b) a 200-step scripted read_file session: per-step wall time, and the part that is not fsync. */
export async function benchSteps(): Promise<BenchRow[]> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-steps-")));
  try {
    mkdirSync(join(root, "src"));
    writeFileSync(
      join(root, "src/file.ts"),
      Array.from({ length: 200 }, (_, i) => `export const v${i} = ${i};`).join("\n"),
    );
    mkdirSync(join(root, ".harness/sessions"), { recursive: true });
    const durable = await timedSession(root, new FileJournalBackend(join(root, ".harness")), "durable");
    const inMemory = await timedSession(root, new MemoryJournalBackend(), "memory");
    const stepDurable = median(durable);
    const stepMemory = median(inMemory);
    return [
      { name: "200-step session: median step, fsync'd journal", value: round(stepDurable), unit: "ms" },
      {
        name: "200-step session: median step without fsync (in-memory journal)",
        value: round(stepMemory),
        unit: "ms",
        note: "goal <= 1 ms",
      },
      {
        name: "200-step session: fsync share of a step",
        value: round(stepDurable - stepMemory),
        unit: "ms",
        note: "4 fsynced appends per step: model.started, model.reply, tool.started, tool.result",
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** (d) `harness --version` start-up vs bare `node -e 0`. */
export function benchVersion(): BenchRow[] {
  const bin = fileURLToPath(new URL("../src/cli/bin.js", import.meta.url));
  const time = (args: string[]) => {
    const samples: number[] = [];
    for (let i = 0; i < 25; i++) {
      const began = performance.now();
      const result = spawnSync(process.execPath, args, { stdio: "ignore" });
      if (result.status !== 0) throw new Error(`${args.join(" ")} failed`);
      samples.push(performance.now() - began);
    }
    return median(samples.slice(3));
  };
  const node = time(["-e", "0"]);
  const version = time([bin, "--version"]);
  return [
    { name: "node -e 0", value: round(node, 1), unit: "ms" },
    { name: "harness --version", value: round(version, 1), unit: "ms" },
    {
      name: "harness --version / node -e 0",
      value: round(version / node, 2),
      unit: "x",
      note: "goal <= 1.3x",
    },
  ];
}
