import { spawnSync } from "node:child_process";
import {
  closeSync,
  constants,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  realpathSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import type { EngineListener } from "../src/engine/options.js";
import { FileJournalStore, type SyncCounter } from "../src/journal/file-store.js";
import { MemoryJournalStore } from "../src/journal/memory-store.js";
import type { JournalStore } from "../src/journal/store.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { sha256Hex } from "../src/shared/hash.js";
import { createFileTools } from "../src/tools/builtin.js";
import { DiskWorkspaceFs } from "../src/workspace/disk-fs.js";
import { type BenchRow, median, round } from "./stats.js";

const STEPS = 200;
/** Rounds of memory, raw-append and file-journal sessions the step goal is read from (see benchSteps). */
const ROUNDS = 5;
/** In-memory sessions run before the goal is measured (see benchSteps). */
const WARMUP_SESSIONS = 15;

interface TimedSession {
  /** Wall time of each step (ms): one model.started to the next. */
  steps: number[];
  /** fsyncs the store made in each step, counted by the store (only for a file journal). */
  fsyncs: number[];
  /** Wall time of each step without the time the store spent in fsync (ms). */
  notFsync: number[];
  /** The journal's own mean fsync time in each step (ms). */
  fsyncMs: number[];
}

/** One scripted session of `steps` read_file steps; returns per-step wall times (ms) and fsyncs. */
async function timedSession(
  root: string,
  backend: JournalStore,
  session: string,
  syncs?: SyncCounter,
): Promise<TimedSession> {
  const registry = new ToolRegistry();
  for (const tool of createFileTools()) registry.register(tool);
  const policy = modePolicy({ write: "allow" });
  const stamps: number[] = [];
  const synced: number[] = [];
  const syncedMs: number[] = [];
  const listener: EngineListener = {
    record(record) {
      if (record.type !== "model.started") return;
      stamps.push(performance.now());
      synced.push(syncs?.fsyncs ?? 0);
      syncedMs.push(syncs?.fsyncMs ?? 0);
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
    store: backend,
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
  const steps = stamps.slice(1).map((t, i) => t - stamps[i]!);
  return {
    steps,
    fsyncs: synced.slice(1).map((n, i) => n - synced[i]!),
    notFsync: steps.map((step, i) => step - (syncedMs[i + 1]! - syncedMs[i]!)),
    fsyncMs: steps.map(
      (_, i) => (syncedMs[i + 1]! - syncedMs[i]!) / Math.max(1, synced[i + 1]! - synced[i]!),
    ),
  };
}

/**
 * The journal in memory with a raw write + fsync of `bytes` bytes to `path` at each of its
 * durable appends: the same session, the same steps, the same fsyncs at the same points, with a
 * raw append in place of the file store's. What it adds to a step over the memory journal alone
 * is what two fsyncs cost a step on this machine, the time a thread waits for the disk and what
 * that wait costs the work after it included. That second part is not small on a virtual
 * machine: measured, two raw appends that time at about 0.2 ms each add about 0.8 ms to a step,
 * and a blocking sleep of the same length in their place costs the step as much, while a busy
 * wait of that length costs only its length. Any durable append pays it; timing the write and
 * fsync alone leaves it on the step.
 */
function rawAppendBackend(path: string, bytes: number): JournalStore & { close(): void; timed: number[] } {
  const inner = new MemoryJournalStore();
  const raw = rawAppender(path);
  const timed: number[] = [];
  return {
    timed,
    close: () => raw.close(),
    async openWriter(sessionId, options) {
      const writer = await inner.openWriter(sessionId, options);
      return {
        sessionId: writer.sessionId,
        keyId: writer.keyId,
        recoveredLock: writer.recoveredLock,
        get length() {
          return writer.length;
        },
        get last() {
          return writer.last;
        },
        get recent() {
          return writer.recent;
        },
        readAll: () => writer.readAll(),
        async append(events, appendOptions) {
          const records = await writer.append(events, appendOptions);
          if (appendOptions?.durable !== false) timed.push(raw.append(bytes));
          return records;
        },
        close: () => writer.close(),
      };
    },
    read: (sessionId) => inner.read(sessionId),
    readReport: (sessionId) => inner.readReport(sessionId),
    exists: (sessionId) => inner.exists(sessionId),
    list: () => inner.list(),
    listChildren: (sessionId) => inner.listChildren(sessionId),
  };
}

/** A raw write + fsync of a line of `bytes` bytes: the floor any durable append of that size pays. */
export function rawAppender(path: string): { append(bytes?: number): number; close(): void } {
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o600);
  const lines = new Map<number, Buffer>();
  return {
    append(bytes = 430) {
      let line = lines.get(bytes);
      if (line === undefined) {
        line = Buffer.alloc(bytes, "x");
        line[bytes - 1] = 0x0a;
        lines.set(bytes, line);
      }
      const t0 = performance.now();
      writeSync(fd, line);
      fsyncSync(fd);
      return performance.now() - t0;
    },
    close: () => closeSync(fd),
  };
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
    // The first session of a process runs while V8 is still compiling the code it runs: its
    // optimizing compiler works through a few hundred functions, one at a time on a background
    // thread, and a step reaches its steady cost only after a few thousand steps of the process
    // (measured: about 1 ms a step in the first session, 0.25-0.4 ms from about the fifteenth).
    // The first session is reported as it is; the goal is read after a warm-up, as in a process
    // that runs many sessions (server, worker, chat), and the warm-up is printed too.
    const coldFile = new FileJournalStore(join(root, ".harness"));
    const cold = await timedSession(root, coldFile, "cold", coldFile.syncs);
    const warmup: number[] = [];
    // The in-memory sessions warm up what every session runs; the file journal's own code warms up
    // in the cold session and the rounds.
    for (let i = 0; i < WARMUP_SESSIONS; i++) {
      warmup.push(median((await timedSession(root, new MemoryJournalStore(), `warmup-${i}`)).steps));
    }
    // Then rounds of three sessions side by side: the memory journal alone, the memory journal
    // with a raw fsync'd append at each durable append, and the file journal. The floor is what
    // the raw appends add to a step, per append; the goal compares the file journal's step with
    // that. Medians over the rounds: a shared machine moves one session's median by a third or
    // more (neighbours' load, not harness).
    const bytes = Math.max(1, Math.round(coldFile.syncs.bytes / Math.max(1, coldFile.syncs.fsyncs)));
    const rounds: {
      memory: number;
      raw: number;
      durable: TimedSession;
      syncs: SyncCounter;
      alone: number;
    }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const memory = median((await timedSession(root, new MemoryJournalStore(), `memory-${i}`)).steps);
      const rawBackend = rawAppendBackend(join(root, `raw-${i}.jsonl`), bytes);
      const raw = await timedSession(root, rawBackend, `raw-${i}`).finally(() => rawBackend.close());
      const file = new FileJournalStore(join(root, ".harness"));
      const durable = await timedSession(root, file, `durable-${i}`, file.syncs);
      rounds.push({
        memory,
        raw: median(raw.steps),
        durable,
        syncs: file.syncs,
        alone: median(rawBackend.timed),
      });
    }
    const stepMemory = median(rounds.map((r) => r.memory));
    const stepRaw = median(rounds.map((r) => r.raw));
    const stepDurable = median(rounds.map((r) => median(r.durable.steps)));
    const floor = (stepRaw - stepMemory) / 2;
    const overs = rounds.map((r) => median(r.durable.steps) - r.raw + r.memory);
    const durable = rounds[0]!.durable;
    const syncs = rounds.reduce(
      (sum, r) => ({
        fsyncs: sum.fsyncs + r.syncs.fsyncs,
        fsyncMs: sum.fsyncMs + r.syncs.fsyncMs,
        bytes: sum.bytes + r.syncs.bytes,
      }),
      { fsyncs: 0, fsyncMs: 0, bytes: 0 },
    );
    const fsyncsPerStep = median(rounds.flatMap((r) => r.durable.fsyncs));
    const fsyncCount = durable.fsyncs.reduce((a, b) => a + b, 0);
    return [
      {
        name: "200-step session: median step, fsync'd journal",
        value: round(stepDurable),
        unit: "ms",
        note: `median over ${ROUNDS} rounds, after the warm-up below`,
      },
      {
        name: "200-step session: median step without its journal fsyncs",
        value: round(median(rounds.map((r) => median(r.durable.notFsync)))),
        unit: "ms",
        note: "the same steps, the store's own fsync time taken out",
      },
      {
        name: "200-step session: median step without fsync (in-memory journal)",
        value: round(stepMemory),
        unit: "ms",
        note: "goal <= 1 ms",
      },
      {
        name: "200-step session: fsyncs per step (counted by the store)",
        value: fsyncsPerStep,
        unit: "",
        note: `${fsyncCount} over ${durable.fsyncs.length} steps; reply+intents, results+next model.started`,
      },
      {
        name: "journal fsync, timed by the store",
        value: round(median(rounds.flatMap((r) => r.durable.fsyncMs))),
        unit: "ms",
        note: `median over the steps (mean ${round(syncs.fsyncMs / Math.max(1, syncs.fsyncs))} ms, ${Math.round(syncs.bytes / Math.max(1, syncs.fsyncs))} bytes each)`,
      },
      {
        name: "raw fsync'd append of those bytes, timed alone",
        value: round(median(rounds.map((r) => r.alone))),
        unit: "ms",
        note: "write + fsync, in the raw-append session",
      },
      {
        name: "floor: what one raw fsync'd append adds to a step",
        value: round(floor),
        unit: "ms",
        note: `(${round(stepRaw)} ms a step with two raw appends - ${round(stepMemory)} ms without) / 2: the wait and what it costs the work after it`,
      },
      {
        name: "200-step session: median step - 2 floors",
        value: round(median(overs)),
        unit: "ms",
        note: `goal <= 0.5 ms; per round ${round(Math.min(...overs))}-${round(Math.max(...overs))} ms (file step - raw-append step + memory step)`,
      },
      {
        name: "warm-up: in-memory median step in sessions 1, 5, 10, 15 after the first",
        value: round(warmup[WARMUP_SESSIONS - 1]!),
        unit: "ms",
        note: [0, 4, 9, 14].map((i) => round(warmup[i]!)).join(", "),
      },
      {
        name: "first session of a fresh process: median step without its journal fsyncs",
        value: round(median(cold.notFsync)),
        unit: "ms",
        note: `median step ${round(median(cold.steps))} ms; V8 is still optimizing what a step runs`,
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
