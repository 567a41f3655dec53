// Issue 35 part 5: journal durability shared by many sessions of one process. Sessions run in this
// process as a server or worker runs them (engines side by side on one event loop); every ratio is
// measured side by side in one run, interleaved, medians over rounds.
import { existsSync, fsyncSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import { FileJournalStore } from "../src/journal/file-store.js";
import { FsyncThreads, HOSTING_FSYNC_THREADS, hostManySessions } from "../src/journal/fsync-threads.js";
import { GroupCommit, processGroupCommit } from "../src/journal/group-commit.js";
import { JournalKey } from "../src/journal/key.js";
import { MemoryJournalStore } from "../src/journal/memory-store.js";
import type { JournalStore } from "../src/journal/store.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import type { ApprovalPort } from "../src/runtime/ports.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { LOCAL_IDENTITY } from "../src/server/identities.js";
import type { SessionFactory } from "../src/server/ports.js";
import { serveSessionFactory } from "../src/server/session-factory.js";
import { type ThreadedSessionFactory, threadedSessionFactory } from "../src/server/threaded-factory.js";
import { fsyncPath } from "../src/shared/fsync.js";
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

/**
 * How journals fsynced before the group commit, for the side-by-side rows: on the main thread,
 * one session's disk wait holding up every other session's events.
 */
const mainThreadCommit = new GroupCommit(1, {
  file: async (fd) => fsyncSync(fd),
  directory: async (path) => fsyncPath(path),
});

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

/** A scripted model file: STEPS read_file calls, then done (as a client passes options.script). */
function scriptFile(parent: string): string {
  const path = join(parent, "script.json");
  const replies = [
    ...Array.from({ length: STEPS }, (_, step) => ({
      calls: [{ id: `r${step}`, name: "read_file", arguments: { path: "src/file.ts", limit: 20 } }],
    })),
    { text: "done" },
  ];
  writeFileSync(path, JSON.stringify({ replies }));
  return path;
}

const denyAll: ApprovalPort = { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) };

/**
 * Steps per second of `count` sessions as `harness serve` hosts them: each opened through the
 * server's session factory (in this thread, or on its session threads) with the scripted model,
 * then one turn each, all at once; only the turns are timed.
 */
async function served(factory: SessionFactory, root: string, script: string, count: number): Promise<number> {
  const sessions = await Promise.all(
    Array.from({ length: count }, () =>
      factory.open({
        workspace: root,
        script: { path: script, code: false },
        options: { max_model_requests: STEPS + 5, max_tool_calls: STEPS + 5, context_window: 1_000_000 },
        identity: LOCAL_IDENTITY,
        approver: () => denyAll,
      }),
    ),
  );
  try {
    const began = performance.now();
    const summaries = await Promise.all(sessions.map((session) => session.turn("read a file", {}).run()));
    const elapsed = performance.now() - began;
    for (const summary of summaries)
      if (summary.tool_calls !== STEPS)
        throw new Error(
          `bench session ended early: ${summary.status} ${summary.reason} ${summary.message} after ${summary.tool_calls} calls`,
        );
    return (count * STEPS * 1000) / elapsed;
  } finally {
    await Promise.all(sessions.map((session) => session.close()));
  }
}

export async function benchGroupCommit(): Promise<BenchRow[]> {
  const cores = availableParallelism();
  const parent = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-group-")));
  // A journal that does not fsync: the same file store on a memory file system, where fsync
  // returns at once. Everything else (encoding, hashing, the write) is the same code.
  const shm = existsSync("/dev/shm") ? mkdtempSync("/dev/shm/harness-bench-group-") : undefined;
  let fsyncThreads: FsyncThreads | undefined;
  const factories: ThreadedSessionFactory[] = [];
  const previousConfig = process.env.HARNESS_CONFIG;
  try {
    // The served sessions read no user config (the session threads copy this environment).
    const config = join(parent, "config.json");
    writeFileSync(config, "{}");
    process.env.HARNESS_CONFIG = config;
    const disk = workspace(parent, "disk");
    const fast = workspace(shm ?? parent, "nofsync");
    // What one process running one session has (libuv's pool only), and what `harness serve`
    // has (the same with fsync threads of its own), each a group commit of its own.
    const grouped = new FileJournalStore(join(disk, ".harness"), { key: KEY, commit: new GroupCommit() });
    // The same with every fsync on the pool, a lone one too (as a hosting process has it).
    const pooledCommit = new GroupCommit();
    pooledCommit.inlineAlone = false;
    const pooled = new FileJournalStore(join(disk, ".harness"), { key: KEY, commit: pooledCommit });
    fsyncThreads = new FsyncThreads(HOSTING_FSYNC_THREADS);
    const hostingCommit = new GroupCommit();
    hostingCommit.widen(fsyncThreads, HOSTING_FSYNC_THREADS);
    const hosting = new FileJournalStore(join(disk, ".harness"), { key: KEY, commit: hostingCommit });
    const mainThread = new FileJournalStore(join(disk, ".harness"), { key: KEY, commit: mainThreadCommit });
    const unsynced: JournalStore = shm
      ? new FileJournalStore(join(fast, ".harness"), { key: KEY, commit: new GroupCommit() })
      : new MemoryJournalStore();
    for (let i = 0; i < WARMUP_SESSIONS; i++) await session(fast, unsynced, nextId("w"));
    // Sessions as `harness serve` hosts them: its factory in this thread (one event loop, the
    // process's group commit widened as serve widens it), or its session threads, one per core,
    // with fsync threads of their own or libuv's pool only.
    const script = scriptFile(parent);
    const local = serveSessionFactory({ log: () => undefined });
    const threaded = (fsync: number) => {
      const factory = threadedSessionFactory({
        threads: cores,
        local,
        log: () => undefined,
        fsyncThreads: fsync,
      });
      factories.push(factory);
      return factory;
    };
    const onThreads = threaded(HOSTING_FSYNC_THREADS);
    const onThreadsPool = threaded(0);
    hostManySessions();
    // One session alone in a process that hosts nothing else (a run): a lone fsync runs inline.
    const aloneInProcess = async (root: string) => {
      processGroupCommit.inlineAlone = true;
      try {
        return await served(local, root, script, 1);
      } finally {
        processGroupCommit.inlineAlone = false;
      }
    };
    // Warm-up: V8 optimizes per thread; every session thread gets sessions before anything is timed.
    for (let i = 0; i < 3; i++) {
      await served(local, fast, script, CONCURRENT);
      await served(onThreads, fast, script, CONCURRENT);
      await served(onThreadsPool, fast, script, CONCURRENT);
    }
    const alone = {
      grouped: [] as number[],
      pooled: [] as number[],
      main: [] as number[],
      off: [] as number[],
      servedOff: [] as number[],
    };
    const many = {
      grouped: [] as number[],
      main: [] as number[],
      serial: [] as number[],
      off: [] as number[],
      hosting: [] as number[],
      servedLoop: [] as number[],
      servedLoopOff: [] as number[],
      servedThreads: [] as number[],
      servedThreadsPool: [] as number[],
      servedThreadsOff: [] as number[],
    };
    for (let round = 0; round < ROUNDS; round++) {
      // In a different order each round, so a machine's drift falls on all alike.
      const singles = [
        async () => alone.grouped.push(await session(disk, grouped, nextId("g"))),
        async () => alone.pooled.push(await session(disk, pooled, nextId("p"))),
        async () => alone.main.push(await session(disk, mainThread, nextId("m"))),
        async () => alone.off.push(await session(fast, unsynced, nextId("o"))),
        async () => alone.servedOff.push(await aloneInProcess(fast)),
      ];
      const together = [
        async () => many.grouped.push(await concurrent(disk, grouped, CONCURRENT)),
        async () => many.main.push(await concurrent(disk, mainThread, CONCURRENT)),
        async () => many.hosting.push(await concurrent(disk, hosting, CONCURRENT)),
        async () => many.serial.push(await serial(disk, grouped, CONCURRENT)),
        async () => many.off.push(await concurrent(fast, unsynced, CONCURRENT)),
        async () => many.servedLoop.push(await served(local, disk, script, CONCURRENT)),
        async () => many.servedLoopOff.push(await served(local, fast, script, CONCURRENT)),
        async () => many.servedThreads.push(await served(onThreads, disk, script, CONCURRENT)),
        async () => many.servedThreadsPool.push(await served(onThreadsPool, disk, script, CONCURRENT)),
        async () => many.servedThreadsOff.push(await served(onThreads, fast, script, CONCURRENT)),
      ];
      for (const run of rotate(singles, round)) await run();
      for (const run of rotate(singles, round + 1)) await run();
      for (const run of rotate(together, round)) await run();
    }
    const step = (times: number[]) => median(times) / STEPS;
    const bound = cores * (1000 / step(alone.off));
    // The bound for served sessions: cores x one served session alone whose journal does not fsync.
    const servedBound = cores * median(alone.servedOff);
    const rate = (rates: number[]) => median(rates);
    const note = `${STEPS}-step read_file sessions, median of ${ROUNDS} rounds`;
    return [
      {
        name: "one session: step, group commit",
        value: round(step(alone.grouped)),
        unit: "ms",
        note: `${note}; a lone fsync inline`,
      },
      {
        name: "one session: step, group commit, every fsync on the pool",
        value: round(step(alone.pooled)),
        unit: "ms",
      },
      {
        name: "one session: pool / main-thread fsync step",
        value: round(step(alone.pooled) / step(alone.main), 2),
        unit: "x",
        note: "without the inline lone fsync",
      },
      {
        name: "one session: step, fsync on the main thread",
        value: round(step(alone.main)),
        unit: "ms",
        note: "how journals synced before",
      },
      {
        name: "one session: step, journal not fsync'd",
        value: round(step(alone.off)),
        unit: "ms",
        note: shm ? "the same file store on /dev/shm" : "in-memory journal (no /dev/shm)",
      },
      {
        name: "one session: group commit / main-thread fsync step",
        value: round(step(alone.grouped) / step(alone.main), 2),
        unit: "x",
        note: "goal <= 1",
      },
      {
        name: "one session: fsync'd / not fsync'd step",
        value: round(step(alone.grouped) / step(alone.off), 2),
        unit: "x",
      },
      {
        name: `${CONCURRENT} sessions together, group commit`,
        value: round(rate(many.grouped), 0),
        unit: "steps/s",
        note: "one process",
      },
      {
        name: `${CONCURRENT} sessions together, group commit + ${HOSTING_FSYNC_THREADS} fsync threads`,
        value: round(rate(many.hosting), 0),
        unit: "steps/s",
        note: "as harness serve runs them",
      },
      {
        name: `${CONCURRENT} sessions together, fsync on the main thread`,
        value: round(rate(many.main), 0),
        unit: "steps/s",
      },
      {
        name: `${CONCURRENT} sessions one after another, group commit`,
        value: round(rate(many.serial), 0),
        unit: "steps/s",
      },
      {
        name: `${CONCURRENT} sessions together, not fsync'd`,
        value: round(rate(many.off), 0),
        unit: "steps/s",
        note: "the most one event loop does",
      },
      { name: `bound: ${cores} cores x one unsynced session`, value: round(bound, 0), unit: "steps/s" },
      {
        name: "together / one after another, group commit",
        value: round(rate(many.grouped) / rate(many.serial), 2),
        unit: "x",
      },
      {
        name: "together / one after another, main-thread fsync",
        value: round(rate(many.main) / rate(many.serial), 2),
        unit: "x",
        note: "the serial run is the group-commit one; a single session pays about the same either way",
      },
      {
        name: "together, group commit / bound",
        value: round(rate(many.grouped) / bound, 2),
        unit: "x",
        note: "goal >= 0.8",
      },
      {
        name: "together, group commit + fsync threads / bound",
        value: round(rate(many.hosting) / bound, 2),
        unit: "x",
        note: "goal >= 0.8",
      },
      {
        name: "together: fsync threads / pool only",
        value: round(rate(many.hosting) / rate(many.grouped), 2),
        unit: "x",
        note: "what more fsyncs on the disk at once buy",
      },
      {
        name: "together: group commit + fsync threads / not fsync'd",
        value: round(rate(many.hosting) / rate(many.off), 2),
        unit: "x",
      },
      {
        name: "together: group commit / not fsync'd",
        value: round(rate(many.grouped) / rate(many.off), 2),
        unit: "x",
        note: "what the disk still costs many sessions",
      },
      {
        name: "served: one session alone, not fsync'd",
        value: round(median(alone.servedOff), 0),
        unit: "steps/s",
        note: "harness serve's factory, in-process; a lone fsync inline",
      },
      { name: `served bound: ${cores} cores x that`, value: round(servedBound, 0), unit: "steps/s" },
      {
        name: `served: ${CONCURRENT} sessions, one event loop (--session-threads 1)`,
        value: round(rate(many.servedLoop), 0),
        unit: "steps/s",
        note: `group commit + ${HOSTING_FSYNC_THREADS} fsync threads`,
      },
      {
        name: `served: ${CONCURRENT} sessions, one event loop, not fsync'd`,
        value: round(rate(many.servedLoopOff), 0),
        unit: "steps/s",
      },
      {
        name: `served: ${CONCURRENT} sessions on ${cores} session threads, + ${HOSTING_FSYNC_THREADS} fsync threads each`,
        value: round(rate(many.servedThreads), 0),
        unit: "steps/s",
        note: `--session-threads ${cores}`,
      },
      {
        name: `served: ${CONCURRENT} sessions on ${cores} session threads, libuv pool only`,
        value: round(rate(many.servedThreadsPool), 0),
        unit: "steps/s",
      },
      {
        name: `served: ${CONCURRENT} sessions on ${cores} session threads, not fsync'd`,
        value: round(rate(many.servedThreadsOff), 0),
        unit: "steps/s",
      },
      {
        name: "served: one event loop / served bound",
        value: round(rate(many.servedLoop) / servedBound, 2),
        unit: "x",
        note: "goal >= 0.8",
      },
      {
        name: `served: ${cores} session threads + fsync threads / served bound`,
        value: round(rate(many.servedThreads) / servedBound, 2),
        unit: "x",
        note: "goal >= 0.8",
      },
      {
        name: `served: ${cores} session threads, pool only / served bound`,
        value: round(rate(many.servedThreadsPool) / servedBound, 2),
        unit: "x",
        note: "goal >= 0.8",
      },
      {
        name: `served: ${cores} session threads, not fsync'd / served bound`,
        value: round(rate(many.servedThreadsOff) / servedBound, 2),
        unit: "x",
        note: "the ceiling with a session thread per core",
      },
      {
        name: "served: one event loop, not fsync'd / served bound",
        value: round(rate(many.servedLoopOff) / servedBound, 2),
        unit: "x",
        note: "the ceiling of one event loop",
      },
      {
        name: `served: ${cores} session threads / one event loop`,
        value: round(rate(many.servedThreads) / rate(many.servedLoop), 2),
        unit: "x",
      },
      {
        name: "together, not fsync'd / bound",
        value: round(rate(many.off) / bound, 2),
        unit: "x",
        note: "the ceiling of one event loop: the sessions' own work runs on one thread",
      },
    ];
  } finally {
    for (const factory of factories) await factory.close();
    if (previousConfig === undefined) delete process.env.HARNESS_CONFIG;
    else process.env.HARNESS_CONFIG = previousConfig;
    await fsyncThreads?.close();
    rmSync(parent, { recursive: true, force: true });
    if (shm) rmSync(shm, { recursive: true, force: true });
  }
}

/** `items` rotated left by `by`. */
function rotate<T>(items: readonly T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await benchGroupCommit()) {
    console.log(`${row.name}\t${row.value} ${row.unit}${row.note ? `\t(${row.note})` : ""}`);
  }
}
