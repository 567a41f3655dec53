// Issue 35 (part 2): memory over a long session. One session of 3,000 read_file steps whose
// context window compacts (as a real long session's does), with its journal and artifacts on disk:
// RSS and heap at step 100 and at step 3,000 of the same session; then 50 sessions of 1,000 steps
// each hosted in one process at once (what `harness serve` holds for them). Each figure is taken in
// a child process of its own, so nothing another section allocated is counted.
//
// Each child starts as the CLI's session commands do (holdYoungGeneration: V8's young generation
// kept at its start size). The long session runs in a fresh process ("cold"), in a process that
// has run a short session first ("warm", as a server's or worker's process is), and, for the
// comparison, in a fresh process with V8's default sizing ("default"), which doubles the young
// generation's semispaces between step 100 and ~500 and keeps them. Time per step (wall and CPU,
// steps 100 to 3,000) is reported for the CLI's sizing against the default. The three kinds
// alternate, so load on the machine falls on all alike.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FileArtifactStore } from "../src/artifacts/file-store.js";
import { Engine } from "../src/engine/engine.js";
import type { EngineListener } from "../src/engine/options.js";
import { FileJournalStore } from "../src/journal/file-store.js";
import { JournalKey } from "../src/journal/key.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import type { Provider } from "../src/providers/provider.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { sha256Hex } from "../src/shared/hash.js";
import { holdYoungGeneration } from "../src/shared/young-generation.js";
import { createFileTools } from "../src/tools/builtin.js";
import { DiskWorkspaceFs } from "../src/workspace/disk-fs.js";
import { type BenchRow, median, round } from "./stats.js";

/** Small enough that ~8 KB results fill it within a few steps: pruning and compaction really happen. */
const WINDOW = 16_000;
const LONG_STEPS = 3_000;
const EARLY_STEP = 100;
/**
 * By here V8 has grown its heap to what the session's allocation rate asks for (the young
 * generation mostly): a step past it measures what the session retains, not that sizing.
 */
const SETTLED_STEP = 500;
const HOSTED_SESSIONS = 50;
const HOSTED_STEPS = 1_000;
/**
 * The bound harness states for a process hosting HOSTED_SESSIONS sessions of HOSTED_STEPS steps
 * (a server, a worker): peak RSS, in MiB. About 4 MiB a session on top of the process's own ~60.
 */
const HOSTED_BOUND_MIB = 256;
/** Child runs of the long session, of each kind; a ratio is the median of the runs' own ratios. */
const RUNS = 3;
/** The warm-up session a warm child runs first (its own workspace and journal). */
const WARM_UP_STEPS = SETTLED_STEP;
/** Lines of ~80 bytes: each read of 100 lines at its own offset is a distinct ~8 KB result. */
const FILE_LINES = 3_200;

interface Sample {
  step: number;
  /** Wall and CPU (user + system) time since the process started, in ms. */
  ms: number;
  cpuMs: number;
  rssMb: number;
  heapMb: number;
  /** Heap reserved, and memory held outside it (buffers): where RSS beyond the heap goes. */
  heapTotalMb: number;
  externalMb: number;
}

/**
 * RSS and heap after full collections (the bench runs node with --expose-gc), in MiB: a second
 * collection frees what the first left to finalizers and weak references.
 */
function sample(step: number): Sample {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const usage = process.memoryUsage();
  const mb = (bytes: number) => bytes / 2 ** 20;
  const cpu = process.cpuUsage();
  return {
    step,
    ms: performance.now(),
    cpuMs: (cpu.user + cpu.system) / 1000,
    rssMb: mb(usage.rss),
    heapMb: mb(usage.heapUsed),
    heapTotalMb: mb(usage.heapTotal),
    externalMb: mb(usage.external),
  };
}

function workspace(): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-memory-")));
  mkdirSync(join(root, "src"));
  const line = (i: number) => `export const value${i} = "${"x".repeat(50)}"; // line ${i}`;
  writeFileSync(join(root, "src/big.ts"), Array.from({ length: FILE_LINES }, (_, i) => line(i)).join("\n"));
  return root;
}

/**
 * One scripted session of `steps` read_file steps, journal and artifacts on disk under `root`;
 * `at(step)` is called as each step's request is built (step counts model requests, from 1).
 */
async function session(
  root: string,
  id: string,
  steps: number,
  key: JournalKey,
  at?: (step: number) => void,
): Promise<void> {
  const registry = new ToolRegistry();
  for (const tool of createFileTools()) registry.register(tool);
  const policy = modePolicy({ write: "allow" });
  let step = 0;
  const listener: EngineListener = {
    record(record) {
      if (record.type === "model.started") at?.(++step);
    },
  };
  const scripted = ScriptedProvider.fromFunction(
    (_m, n) =>
      n < steps
        ? {
            text: `Reading part ${n}.`,
            calls: [
              {
                id: `r${n}`,
                name: "read_file",
                arguments: { path: "src/big.ts", offset: 1 + (n % (FILE_LINES - 100)), limit: 100 },
              },
            ],
          }
        : { text: "done" },
    "bench-memory",
  );
  const provider: Provider = {
    identity: scripted.identity,
    stream(request, signal) {
      if (request.purpose === "compaction") return summaryStream(request.step);
      return scripted.stream(request, signal);
    },
  };
  const harnessDir = join(root, ".harness");
  const engine = new Engine({
    sessionId: id,
    store: new FileJournalStore(harnessDir, { key }),
    provider,
    runtime: {
      snapshot: registry.snapshot(),
      fs: await DiskWorkspaceFs.create(root),
      hostRoot: root,
      artifacts: new FileArtifactStore(join(harnessDir, "sessions", id, "artifacts")),
      approver: { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) },
    },
    workspace: { name: "bench", fingerprint: sha256Hex(root) },
    goal: `read a large file ${steps} times`,
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: [],
    limits: { maxModelRequests: 2 * steps + 5, maxToolCalls: steps + 5, contextWindowTokens: WINDOW },
    mode: "new",
    harnessVersion: "bench",
    listener,
  });
  const summary = await engine.run();
  if (summary.tool_calls !== steps)
    throw new Error(`memory bench session ended early: ${summary.status} (${summary.reason})`);
}

async function* summaryStream(step: number): AsyncIterable<unknown> {
  yield { type: "text_delta", text: `Goal: read src/big.ts in parts. Progress: ${step} parts read.` };
  yield { type: "end", reason: "stop" };
}

/** Child: one long session, sampled at EARLY_STEP and at its last step; `warm`: after a short session. */
async function childLong(warm: boolean): Promise<Sample[]> {
  if (warm) {
    const first = workspace();
    try {
      await session(first, "warm-up", WARM_UP_STEPS, JournalKey.ephemeral());
    } finally {
      rmSync(first, { recursive: true, force: true });
    }
  }
  const root = workspace();
  try {
    const samples: Sample[] = [sample(0)];
    await session(root, "long", LONG_STEPS, JournalKey.ephemeral(), (step) => {
      if (step === EARLY_STEP || step === SETTLED_STEP || step === LONG_STEPS) samples.push(sample(step));
    });
    return samples;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

interface Hosted {
  peakRssMb: number;
  endRssMb: number;
  samples: Sample[];
}

/** Child: HOSTED_SESSIONS sessions at once in this process; RSS sampled as the first reaches each hundred steps. */
async function childHosted(): Promise<Hosted> {
  const root = workspace();
  try {
    const key = JournalKey.ephemeral();
    const samples: Sample[] = [sample(0)];
    let peak = 0;
    const watch = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss / 2 ** 20);
    }, 50);
    await Promise.all(
      Array.from({ length: HOSTED_SESSIONS }, (_, i) =>
        session(root, `hosted-${i}`, HOSTED_STEPS, key, (step) => {
          if (i === 0 && step % 250 === 0) samples.push(sample(step));
        }),
      ),
    );
    clearInterval(watch);
    const end = sample(HOSTED_STEPS);
    return { peakRssMb: Math.max(peak, process.resourceUsage().maxRSS / 1024), endRssMb: end.rssMb, samples };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function child<T>(mode: string): Promise<T> {
  const self = fileURLToPath(import.meta.url);
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["--expose-gc", self, mode], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    proc.on("error", reject);
    proc.on("close", (code) => {
      if (code !== 0) reject(new Error(`memory bench child (${mode}) exited with ${code}`));
      else resolve(JSON.parse(out) as T);
    });
  });
}

export async function benchMemory(): Promise<BenchRow[]> {
  const cold: Sample[][] = [];
  const warm: Sample[][] = [];
  const sized: Sample[][] = [];
  for (let i = 0; i < RUNS; i++) {
    cold.push(await child<Sample[]>("long"));
    warm.push(await child<Sample[]>("long-warm"));
    sized.push(await child<Sample[]>("long-default"));
  }
  const at = (run: Sample[], step: number) => run.find((s) => s.step === step) as Sample;
  const ratio = (runs: Sample[][], field: "rssMb" | "heapMb", from: number) =>
    runs.map((run) => at(run, LONG_STEPS)[field] / at(run, from)[field]);
  const listed = (ratios: number[]) => ratios.map((r) => round(r, 3)).join(", ");
  const rss = {
    cold: ratio(cold, "rssMb", EARLY_STEP),
    warm: ratio(warm, "rssMb", EARLY_STEP),
    sized: ratio(sized, "rssMb", EARLY_STEP),
  };
  // Time a step takes from step 100 to the last, per run: wall and CPU.
  const stepMs = (runs: Sample[][], field: "ms" | "cpuMs") =>
    median(
      runs.map(
        (run) => (at(run, LONG_STEPS)[field] - at(run, EARLY_STEP)[field]) / (LONG_STEPS - EARLY_STEP),
      ),
    );
  const time = {
    wall: stepMs(cold, "ms"),
    wallDefault: stepMs(sized, "ms"),
    cpu: stepMs(cold, "cpuMs"),
    cpuDefault: stepMs(sized, "cpuMs"),
  };
  const heapRatios = ratio(warm, "heapMb", EARLY_STEP);
  const settledRatios = ratio(cold, "rssMb", SETTLED_STEP);
  // What the session keeps per step, in bytes of heap after full collections (warm runs).
  const perStep = warm.map(
    (run) =>
      ((at(run, LONG_STEPS).heapMb - at(run, EARLY_STEP).heapMb) * 2 ** 20) / (LONG_STEPS - EARLY_STEP),
  );
  const heapReserved = (runs: Sample[][], step: number) =>
    median(runs.map((run) => at(run, step).heapTotalMb));
  const outsideHeap = (runs: Sample[][], step: number) =>
    median(runs.map((run) => at(run, step).rssMb - at(run, step).heapTotalMb));
  const early = median(warm.map((run) => at(run, EARLY_STEP).rssMb));
  const late = median(warm.map((run) => at(run, LONG_STEPS).rssMb));
  const hosted = await child<Hosted>("hosted");
  const hostedDefault = await child<Hosted>("hosted-default");
  // Wall and CPU from the first sample (before any session) to the last, held against default.
  const span = (run: Hosted, field: "ms" | "cpuMs") =>
    (run.samples.at(-1) as Sample)[field] - (run.samples[0] as Sample)[field];
  const hostedAt = (step: number) => hosted.samples.find((s) => s.step === step);
  const hostedFrom = hostedAt(HOSTED_STEPS / 4);
  const hostedTo = hostedAt(HOSTED_STEPS);
  const hostedPerStep =
    hostedFrom !== undefined && hostedTo !== undefined
      ? ((hostedTo.heapMb - hostedFrom.heapMb) * 2 ** 20) / (HOSTED_SESSIONS * (HOSTED_STEPS * 0.75))
      : undefined;
  return [
    {
      name: `RSS at step ${EARLY_STEP} (file journal, ${WINDOW / 1000}K window, warm process)`,
      value: round(early, 1),
      unit: "MiB",
    },
    {
      name: `RSS at step ${LONG_STEPS} of the same session (warm process)`,
      value: round(late, 1),
      unit: "MiB",
    },
    {
      name: `RSS: step ${LONG_STEPS} / step ${EARLY_STEP} (warm process)`,
      value: round(median(rss.warm), 3),
      unit: "x",
      note: `median of ${RUNS} sessions' own ratios (${listed(rss.warm)}), each after a ${WARM_UP_STEPS}-step session in the same process; goal <= 1.1`,
    },
    {
      name: `RSS: step ${LONG_STEPS} / step ${EARLY_STEP} (cold process)`,
      value: round(median(rss.cold), 3),
      unit: "x",
      note: `${listed(rss.cold)}; goal <= 1.1; young generation held at its start size as the CLI's session commands hold it; heap reserved ${round(heapReserved(cold, EARLY_STEP), 1)} -> ${round(heapReserved(cold, SETTLED_STEP), 1)} -> ${round(heapReserved(cold, LONG_STEPS), 1)} MiB at steps ${EARLY_STEP}, ${SETTLED_STEP}, ${LONG_STEPS}, RSS outside the heap ${round(outsideHeap(cold, EARLY_STEP), 1)} -> ${round(outsideHeap(cold, LONG_STEPS), 1)} MiB`,
    },
    {
      name: `RSS: step ${LONG_STEPS} / step ${EARLY_STEP} (cold process, V8's default young generation)`,
      value: round(median(rss.sized), 3),
      unit: "x",
      note: `${listed(rss.sized)}; heap reserved ${round(heapReserved(sized, EARLY_STEP), 1)} -> ${round(heapReserved(sized, SETTLED_STEP), 1)} -> ${round(heapReserved(sized, LONG_STEPS), 1)} MiB (semispaces doubled up to 16 MiB); RSS at step ${LONG_STEPS} ${round(median(sized.map((run) => at(run, LONG_STEPS).rssMb)), 1)} MiB against ${round(median(cold.map((run) => at(run, LONG_STEPS).rssMb)), 1)} MiB held`,
    },
    {
      name: "time per step, young generation held / V8's default (cold processes)",
      value: round(time.wall / time.wallDefault, 3),
      unit: "x",
      note: `wall ${round(time.wall, 2)} vs ${round(time.wallDefault, 2)} ms, CPU ${round(time.cpu, 2)} vs ${round(time.cpuDefault, 2)} ms (CPU ratio ${round(time.cpu / time.cpuDefault, 3)}); steps ${EARLY_STEP} to ${LONG_STEPS}, medians of ${RUNS} runs each`,
    },
    {
      name: `RSS: step ${LONG_STEPS} / step ${SETTLED_STEP} (cold process)`,
      value: round(median(settledRatios), 3),
      unit: "x",
      note: "what the session retains once V8 has sized its heap for the step rate",
    },
    {
      name: `heap used: step ${LONG_STEPS} / step ${EARLY_STEP} (warm process)`,
      value: round(median(heapRatios), 3),
      unit: "x",
      note: `after full collections; ${listed(heapRatios)}`,
    },
    {
      name: "heap kept per step (warm process)",
      value: Math.round(median(perStep)),
      unit: "B",
      note: `heap used at step ${LONG_STEPS} less at step ${EARLY_STEP}, over the steps between; runs ${perStep.map((b) => Math.round(b)).join(", ")}`,
    },
    {
      name: `${HOSTED_SESSIONS} sessions x ${HOSTED_STEPS} steps at once in one process: peak RSS`,
      value: round(hosted.peakRssMb, 1),
      unit: "MiB",
      note: `${hosted.peakRssMb <= HOSTED_BOUND_MIB ? "within" : "OVER"} the stated bound of ${HOSTED_BOUND_MIB} MiB; RSS after the last step ${round(hosted.endRssMb, 1)} MiB${hostedPerStep === undefined ? "" : `; heap kept per session-step ${Math.round(hostedPerStep)} B (steps ${HOSTED_STEPS / 4} to ${HOSTED_STEPS})`}; with V8's default young generation: peak ${round(hostedDefault.peakRssMb, 1)} MiB`,
    },
    {
      name: `${HOSTED_SESSIONS} sessions x ${HOSTED_STEPS} steps: time, young generation held / V8's default`,
      value: round(span(hosted, "ms") / span(hostedDefault, "ms"), 3),
      unit: "x",
      note: `wall ${round(span(hosted, "ms") / 1000, 1)} vs ${round(span(hostedDefault, "ms") / 1000, 1)} s, CPU ${round(span(hosted, "cpuMs") / 1000, 1)} vs ${round(span(hostedDefault, "cpuMs") / 1000, 1)} s (one run each)`,
    },
  ];
}

const mode = process.argv[2];
const modes = ["long", "long-warm", "long-default", "hosted", "hosted-default"];
if (mode !== undefined && modes.includes(mode)) {
  // As the CLI starts a command that hosts sessions (src/cli/bin.ts), unless measuring the default.
  if (!mode.endsWith("-default")) holdYoungGeneration();
  const result = mode.startsWith("hosted") ? await childHosted() : await childLong(mode === "long-warm");
  process.stdout.write(JSON.stringify(result));
}
