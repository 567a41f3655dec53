// Issue 35 part 5: journal durability shared by many sessions of one process. Sessions run in this
// process as a server or worker runs them (engines side by side on one event loop); every ratio is
// measured side by side in one run, interleaved, medians over rounds.
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import { FileJournalStore } from "../src/journal/file-store.js";
import { JournalKey } from "../src/journal/key.js";
import { MemoryJournalStore } from "../src/journal/memory-store.js";
import type { JournalStore } from "../src/journal/store.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { sha256Hex } from "../src/shared/hash.js";
import { createFileTools } from "../src/tools/builtin.js";
import { DiskWorkspaceFs } from "../src/workspace/disk-fs.js";
import { type BenchRow, median, round } from "./stats.js";

const STEPS = 100;
const CONCURRENT = 16;
const ROUNDS = 3;
/** Sessions run before anything is measured, so V8 has optimized what a step runs (see bench/session.ts). */
const WARMUP_SESSIONS = 15;
const KEY = JournalKey.ephemeral();

/** One scripted session of STEPS read_file steps on `store`; resolves to its wall time (ms). */
async function session(root: string, store: JournalStore, id: string): Promise<number> {
  const registry = new ToolRegistry();
  for (const tool of createFileTools()) registry.register(tool);
  const policy = modePolicy({ write: "allow" });
  const provider = ScriptedProvider.fromFunction(
    (_m, step) =>
      step < STEPS
        ? { calls: [{ id: `r${step}`, name: "read_file", arguments: { path: "src/file.ts", limit: 20 } }] }
        : { text: "done" },
    "bench",
  );
  const engine = new Engine({
    sessionId: id,
    store,
    provider,
    runtime: {
      snapshot: registry.snapshot(),
      fs: await DiskWorkspaceFs.create(root),
      hostRoot: root,
      artifacts: new MemoryArtifactStore(),
      approver: { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) },
    },
    workspace: { name: "bench", fingerprint: sha256Hex(root) },
    goal: "read a file",
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: [],
    limits: { maxModelRequests: STEPS + 5, maxToolCalls: STEPS + 5, contextWindowTokens: 10_000_000 },
    mode: "new",
    harnessVersion: "bench",
  });
  const began = performance.now();
  const summary = await engine.run();
  if (summary.tool_calls !== STEPS) throw new Error(`bench session ended early: ${summary.status}`);
  return performance.now() - began;
}

/** A workspace with the file the sessions read; its `.harness` is where the journals go. */
function workspace(parent: string, name: string): string {
  const root = join(parent, name);
  mkdirSync(join(root, "src"), { recursive: true });
  writeFileSync(
    join(root, "src/file.ts"),
    Array.from({ length: 200 }, (_, i) => `export const v${i} = ${i};`).join("\n"),
  );
  return root;
}

let counter = 0;
const nextId = (label: string) => `${label}-${++counter}`;

/** Steps per second of `count` sessions run together in this process. */
async function concurrent(root: string, store: JournalStore, count: number): Promise<number> {
  const began = performance.now();
  await Promise.all(Array.from({ length: count }, () => session(root, store, nextId("c"))));
  return (count * STEPS * 1000) / (performance.now() - began);
}

/** Steps per second of `count` sessions run one after another. */
async function serial(root: string, store: JournalStore, count: number): Promise<number> {
  let total = 0;
  for (let i = 0; i < count; i++) total += await session(root, store, nextId("s"));
  return (count * STEPS * 1000) / total;
}

export async function benchGroupCommit(): Promise<BenchRow[]> {
  const cores = availableParallelism();
  const parent = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-group-")));
  // A journal that does not fsync: the same file store on a memory file system, where fsync
  // returns at once. Everything else (encoding, hashing, the write) is the same code.
  const shm = existsSync("/dev/shm") ? mkdtempSync("/dev/shm/harness-bench-group-") : undefined;
  try {
    const disk = workspace(parent, "disk");
    const fast = workspace(shm ?? parent, "nofsync");
    const durable = new FileJournalStore(join(disk, ".harness"), { key: KEY });
    const unsynced: JournalStore = shm
      ? new FileJournalStore(join(fast, ".harness"), { key: KEY })
      : new MemoryJournalStore();
    for (let i = 0; i < WARMUP_SESSIONS; i++) await session(fast, unsynced, nextId("w"));
    const alone = { on: [] as number[], off: [] as number[] };
    const many = { together: [] as number[], serial: [] as number[], off: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      // Each pair in both orders, so a machine's drift falls on both alike.
      const pair = [
        async () => alone.on.push(await session(disk, durable, nextId("on"))),
        async () => alone.off.push(await session(fast, unsynced, nextId("off"))),
      ];
      if (round % 2 === 1) pair.reverse();
      for (const run of [...pair, ...pair]) await run();
      many.off.push(await concurrent(fast, unsynced, CONCURRENT));
      many.together.push(await concurrent(disk, durable, CONCURRENT));
      many.serial.push(await serial(disk, durable, CONCURRENT));
    }
    const stepOn = median(alone.on) / STEPS;
    const stepOff = median(alone.off) / STEPS;
    const bound = cores * (1000 / stepOff);
    const together = median(many.together);
    const serialRate = median(many.serial);
    const note = `${STEPS}-step read_file sessions, median of ${ROUNDS} rounds`;
    return [
      { name: "one session: step, journal fsync'd", value: round(stepOn), unit: "ms", note },
      {
        name: "one session: step, journal not fsync'd",
        value: round(stepOff),
        unit: "ms",
        note: shm ? "same file store on /dev/shm" : "in-memory journal (no /dev/shm)",
      },
      { name: "one session: fsync'd / not fsync'd step", value: round(stepOn / stepOff, 2), unit: "x" },
      {
        name: `${CONCURRENT} sessions together, journal fsync'd`,
        value: round(together, 0),
        unit: "steps/s",
        note: "one process",
      },
      { name: `${CONCURRENT} sessions one after another, fsync'd`, value: round(serialRate, 0), unit: "steps/s" },
      {
        name: `${CONCURRENT} sessions together, not fsync'd`,
        value: round(median(many.off), 0),
        unit: "steps/s",
        note: "what one event loop does without disk waits",
      },
      {
        name: `bound: ${cores} cores x one unsynced session`,
        value: round(bound, 0),
        unit: "steps/s",
      },
      { name: "together / one after another", value: round(together / serialRate, 2), unit: "x" },
      {
        name: "together / bound",
        value: round(together / bound, 2),
        unit: "x",
        note: "goal >= 0.8",
      },
      {
        name: "together fsync'd / together not fsync'd",
        value: round(together / median(many.off), 2),
        unit: "x",
        note: "what the disk still costs many sessions",
      },
    ];
  } finally {
    rmSync(parent, { recursive: true, force: true });
    if (shm) rmSync(shm, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await benchGroupCommit()) {
    console.log(`${row.name}\t${row.value} ${row.unit}${row.note ? `\t(${row.note})` : ""}`);
  }
}
