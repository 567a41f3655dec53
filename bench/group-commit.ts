// Issue 35 part 5: journal durability shared by many sessions of one process. Sessions run in this
// process as a server or worker runs them (engines side by side on one event loop); every ratio is
// measured side by side in one run, interleaved, medians over rounds.
import { existsSync, fsyncSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import { FileJournalStore } from "../src/journal/file-store.js";
import { FsyncThreads, HOSTING_FSYNC_THREADS, hostManySessions } from "../src/journal/fsync-threads.js";
import { GroupCommit } from "../src/journal/group-commit.js";
import { JournalKey } from "../src/journal/key.js";
import { MemoryJournalStore } from "../src/journal/memory-store.js";
import type { JournalStore } from "../src/journal/store.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { ToolRegistry } from "../src/runtime/registry.js";
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

/** What a session thread is asked to run: `count` sessions together on one of its stores. */
interface ThreadJob {
  count: number;
  synced: boolean;
}

/** What a session thread is started with: the two workspaces its stores journal into. */
interface ThreadSetup {
  groupBenchThread: true;
  disk: string;
  fast: string;
  shm: boolean;
}

/**
 * Sessions hosted in worker threads, as a server could host them with a pool sized to the cores:
 * each thread has its own event loop, engines, stores and group commit (module state is per
 * thread); the fsyncs of all threads share libuv's one thread pool, as they would in a server.
 */
class SessionThreads {
  readonly #workers: Worker[];

  private constructor(workers: Worker[]) {
    this.#workers = workers;
  }

  /** `count` threads, each warmed up (V8 optimizes per thread) before anything is measured. */
  static async start(count: number, setup: Omit<ThreadSetup, "groupBenchThread">): Promise<SessionThreads> {
    const workers = Array.from(
      { length: count },
      (_, i) =>
        new Worker(new URL(import.meta.url), {
          workerData: { groupBenchThread: true, ...setup, thread: i } satisfies ThreadSetup & {
            thread: number;
          },
        }),
    );
    await Promise.all(workers.map((worker) => reply(worker)));
    return new SessionThreads(workers);
  }

  /** Steps per second of `count` sessions spread evenly over the threads, all at once. */
  async together(count: number, synced: boolean): Promise<number> {
    const share = Math.ceil(count / this.#workers.length);
    const began = performance.now();
    await Promise.all(
      this.#workers.map((worker, i) => {
        const job: ThreadJob = { count: Math.min(share, count - i * share), synced };
        worker.postMessage(job);
        return reply(worker);
      }),
    );
    return (count * STEPS * 1000) / (performance.now() - began);
  }

  async stop(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
  }
}

/** The thread's next message; its error (or an exit without one) rejects. */
function reply(worker: Worker): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      worker.off("message", onMessage);
      worker.off("error", onError);
    };
    const onMessage = (message: unknown) => {
      cleanup();
      if (typeof message === "object" && message !== null && "error" in message)
        reject(new Error(String((message as { error: unknown }).error)));
      else resolve(message);
    };
    const onError = (error: unknown) => {
      cleanup();
      reject(error);
    };
    worker.on("message", onMessage);
    worker.on("error", onError);
  });
}

/** Inside a session thread: warm up, then run each job and answer when its sessions are done. */
async function serveThread(setup: ThreadSetup & { thread: number }): Promise<void> {
  const port = parentPort;
  if (port === null) return;
  // As `harness serve` sets up its process.
  hostManySessions();
  const grouped = new FileJournalStore(join(setup.disk, ".harness"), { key: KEY });
  const unsynced: JournalStore = setup.shm
    ? new FileJournalStore(join(setup.fast, ".harness"), { key: KEY })
    : new MemoryJournalStore();
  const label = (kind: string) => `t${setup.thread}${kind}`;
  for (let i = 0; i < WARMUP_SESSIONS; i++) await session(setup.fast, unsynced, nextId(label("w")));
  port.on("message", (job: ThreadJob) => {
    const root = job.synced ? setup.disk : setup.fast;
    const store = job.synced ? grouped : unsynced;
    Promise.all(Array.from({ length: job.count }, () => session(root, store, nextId(label("c"))))).then(
      () => port.postMessage({ done: true }),
      (error: unknown) => port.postMessage({ error: error instanceof Error ? error.message : String(error) }),
    );
  });
  port.postMessage({ ready: true });
}

export async function benchGroupCommit(): Promise<BenchRow[]> {
  const cores = availableParallelism();
  const parent = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-group-")));
  // A journal that does not fsync: the same file store on a memory file system, where fsync
  // returns at once. Everything else (encoding, hashing, the write) is the same code.
  const shm = existsSync("/dev/shm") ? mkdtempSync("/dev/shm/harness-bench-group-") : undefined;
  let threads: SessionThreads | undefined;
  let fsyncThreads: FsyncThreads | undefined;
  try {
    const disk = workspace(parent, "disk");
    const fast = workspace(shm ?? parent, "nofsync");
    // What one process running one session has (libuv's pool only), and what `harness serve`
    // has (the same with fsync threads of its own), each a group commit of its own.
    const grouped = new FileJournalStore(join(disk, ".harness"), { key: KEY, commit: new GroupCommit() });
    fsyncThreads = new FsyncThreads(HOSTING_FSYNC_THREADS);
    const hostingCommit = new GroupCommit();
    hostingCommit.widen(fsyncThreads, HOSTING_FSYNC_THREADS);
    const hosting = new FileJournalStore(join(disk, ".harness"), { key: KEY, commit: hostingCommit });
    const mainThread = new FileJournalStore(join(disk, ".harness"), { key: KEY, commit: mainThreadCommit });
    const unsynced: JournalStore = shm
      ? new FileJournalStore(join(fast, ".harness"), { key: KEY })
      : new MemoryJournalStore();
    for (let i = 0; i < WARMUP_SESSIONS; i++) await session(fast, unsynced, nextId("w"));
    const pool = await SessionThreads.start(cores, { disk, fast, shm: shm !== undefined });
    threads = pool;
    const alone = { grouped: [] as number[], main: [] as number[], off: [] as number[] };
    const many = {
      grouped: [] as number[],
      main: [] as number[],
      serial: [] as number[],
      off: [] as number[],
      hosting: [] as number[],
      threadsGrouped: [] as number[],
      threadsOff: [] as number[],
    };
    for (let round = 0; round < ROUNDS; round++) {
      // In a different order each round, so a machine's drift falls on all alike.
      const singles = [
        async () => alone.grouped.push(await session(disk, grouped, nextId("g"))),
        async () => alone.main.push(await session(disk, mainThread, nextId("m"))),
        async () => alone.off.push(await session(fast, unsynced, nextId("o"))),
      ];
      const together = [
        async () => many.grouped.push(await concurrent(disk, grouped, CONCURRENT)),
        async () => many.main.push(await concurrent(disk, mainThread, CONCURRENT)),
        async () => many.hosting.push(await concurrent(disk, hosting, CONCURRENT)),
        async () => many.serial.push(await serial(disk, grouped, CONCURRENT)),
        async () => many.off.push(await concurrent(fast, unsynced, CONCURRENT)),
        async () => many.threadsGrouped.push(await pool.together(CONCURRENT, true)),
        async () => many.threadsOff.push(await pool.together(CONCURRENT, false)),
      ];
      for (const run of rotate(singles, round)) await run();
      for (const run of rotate(singles, round + 1)) await run();
      for (const run of rotate(together, round)) await run();
    }
    const step = (times: number[]) => median(times) / STEPS;
    const bound = cores * (1000 / step(alone.off));
    const rate = (rates: number[]) => median(rates);
    const note = `${STEPS}-step read_file sessions, median of ${ROUNDS} rounds`;
    return [
      { name: "one session: step, group commit", value: round(step(alone.grouped)), unit: "ms", note },
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
        name: `${CONCURRENT} sessions in ${cores} threads, group commit + fsync threads`,
        value: round(rate(many.threadsGrouped), 0),
        unit: "steps/s",
        note: "one process, a session thread per core",
      },
      {
        name: `${CONCURRENT} sessions in ${cores} threads, not fsync'd`,
        value: round(rate(many.threadsOff), 0),
        unit: "steps/s",
      },
      {
        name: `in ${cores} threads, group commit / bound`,
        value: round(rate(many.threadsGrouped) / bound, 2),
        unit: "x",
        note: "goal >= 0.8",
      },
      {
        name: `in ${cores} threads, not fsync'd / bound`,
        value: round(rate(many.threadsOff) / bound, 2),
        unit: "x",
        note: "the ceiling with a session thread per core",
      },
      {
        name: `in ${cores} threads / one event loop, group commit + fsync threads`,
        value: round(rate(many.threadsGrouped) / rate(many.hosting), 2),
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
    await threads?.stop();
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

if (!isMainThread && (workerData as Partial<ThreadSetup> | null)?.groupBenchThread === true) {
  await serveThread(workerData as ThreadSetup & { thread: number });
} else if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await benchGroupCommit()) {
    console.log(`${row.name}\t${row.value} ${row.unit}${row.note ? `\t(${row.note})` : ""}`);
  }
}
