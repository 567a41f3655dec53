// A run on a big repository end to end (issue 35, part 3): `harness run` (the built CLI, a
// scripted model that makes one grep call and then answers) on a ~50k-file tree against `rg` run
// directly on it, measured side by side in one run: the first run (nothing recorded yet: every
// file is hashed and kept) and the later runs (the stat cache saved by the first), with each
// run's peak RSS. A run whose model only answers shows what recording the workspace costs alone.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { benchTree } from "./grep.js";
import { type BenchRow, median, round } from "./stats.js";

const BIN = fileURLToPath(new URL("../src/cli/bin.js", import.meta.url));
/** Bump when the copy's recipe changes. */
const COPY_VERSION = 1;
/** Interleaved rounds (HARNESS_BENCH_RUNS overrides): under load, more rounds steady the medians. */
const RUNS = Number(process.env.HARNESS_BENCH_RUNS ?? 5) || 5;
const PATTERN = "process.nextTick";
/** GNU time: the child's peak RSS (`%M`, KB) as the kernel counted it. */
const TIME = "/usr/bin/time";

/**
 * The grep bench's tree, copied once: a run writes `.harness/` into its workspace, and the
 * shared tree must stay as the other benches expect it.
 */
function runTree(): { root: string; files: number } {
  const root = path.join(tmpdir(), `harness-bench-walk-v${COPY_VERSION}`);
  const marker = path.join(root, ".bench-walk-complete");
  const shared = benchTree();
  if (existsSync(marker)) return { root, files: shared.files };
  rmSync(root, { recursive: true, force: true });
  const copied = spawnSync("cp", ["-a", shared.root, root]);
  if (copied.status !== 0) throw new Error(`copying the tree failed: ${copied.stderr}`);
  rmSync(path.join(root, ".harness"), { recursive: true, force: true });
  writeFileSync(marker, "");
  return { root, files: shared.files };
}

interface Timed {
  ms: number;
  /** Peak resident set of the process (MB); NaN without GNU time. */
  rssMb: number;
}

function timedProcess(argv: string[], cwd: string): Timed {
  const time = existsSync(TIME);
  // No standard input: rg given none reads it instead of the directory.
  const stdio: ["ignore", "pipe", "pipe"] = ["ignore", "pipe", "pipe"];
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  delete env.NODE_OPTIONS;
  const start = performance.now();
  const result = time
    ? spawnSync(TIME, ["-f", "maxrss=%M", ...argv], { cwd, env, maxBuffer: 1 << 30, stdio })
    : spawnSync(argv[0] as string, argv.slice(1), { cwd, env, maxBuffer: 1 << 30, stdio });
  const ms = performance.now() - start;
  // rg exits 1 when nothing matched; the pattern matches in this tree, so only 0 is success.
  if (result.status !== 0)
    throw new Error(
      `${path.basename(argv[1] ?? argv[0] ?? "")} failed: ${String(result.stderr).slice(-500)}`,
    );
  const rss = /maxrss=(\d+)/.exec(String(result.stderr));
  return { ms, rssMb: rss ? Number(rss[1]) / 1024 : Number.NaN };
}

export async function benchWorkspaceRun(): Promise<BenchRow[]> {
  if (spawnSync("rg", ["--version"]).status !== 0)
    return [{ name: "run.grep", value: Number.NaN, unit: "", note: "rg is not installed" }];
  const { root, files } = runTree();
  const scripts = mkdtempSync(path.join(tmpdir(), "harness-bench-walk-scripts-"));
  const empty = path.join(scripts, "empty");
  mkdirSync(empty);
  try {
    const grepScript = path.join(scripts, "grep.json");
    writeFileSync(
      grepScript,
      JSON.stringify({
        replies: [
          { calls: [{ id: "g1", name: "grep", arguments: { pattern: PATTERN, max_results: 2000 } }] },
          { text: "done" },
        ],
      }),
    );
    const answerScript = path.join(scripts, "answer.json");
    writeFileSync(answerScript, JSON.stringify({ replies: [{ text: "done" }] }));
    const run = (workspace: string, script: string): Timed =>
      timedProcess(
        [
          process.execPath,
          BIN,
          "run",
          "--workspace",
          workspace,
          "--script",
          script,
          "find the nextTick calls",
        ],
        workspace,
      );
    // What a person types: hidden files (harness's own .harness among them) and ignored ones skipped.
    const rg = (): Timed => timedProcess(["rg", "-n", PATTERN], root);

    const load = loadavg()[0] ?? Number.NaN;
    rg(); // the page cache warmed for both
    rmSync(path.join(root, ".harness"), { recursive: true, force: true });
    const firstRg = rg();
    const first = run(root, grepScript);
    const times = {
      rg: [] as number[],
      later: [] as number[],
      answer: [] as number[],
      empty: [] as number[],
    };
    const rss = { later: [] as number[], answer: [] as number[], empty: [] as number[] };
    for (let i = 0; i < RUNS; i++) {
      times.rg.push(rg().ms);
      const later = run(root, grepScript);
      times.later.push(later.ms);
      rss.later.push(later.rssMb);
      const answer = run(root, answerScript);
      times.answer.push(answer.ms);
      rss.answer.push(answer.rssMb);
      const bare = run(empty, answerScript);
      times.empty.push(bare.ms);
      rss.empty.push(bare.rssMb);
    }
    const rgMs = median(times.rg);
    const laterMs = median(times.later);
    // Each round's own ratio too: rg and the run beside it saw the same load.
    const perRound = median(times.later.map((ms, i) => ms / (times.rg[i] as number)));
    const note = `load ${round(load, 1)} at start, ${round(loadavg()[0] ?? Number.NaN, 1)} at end; median of ${RUNS}, interleaved`;
    return [
      { name: "run.tree", value: files, unit: "files", note: root },
      { name: "run.rg_direct", value: round(rgMs, 0), unit: "ms", note: `rg -n ${PATTERN}; ${note}` },
      {
        name: "run.first.wall",
        value: round(first.ms, 0),
        unit: "ms",
        note: `nothing recorded before: every file hashed and kept (rg beside it: ${round(firstRg.ms, 0)} ms)`,
      },
      { name: "run.first.peak_rss", value: round(first.rssMb, 0), unit: "MB", note: "goal < 200" },
      {
        name: "run.later.wall",
        value: round(laterMs, 0),
        unit: "ms",
        note: "the stat cache of the run before",
      },
      { name: "run.later.peak_rss", value: round(median(rss.later), 0), unit: "MB" },
      {
        name: "run.later.ratio_vs_rg",
        value: round(laterMs / rgMs, 2),
        unit: "x",
        note: `goal <= 3; median of the rounds' own ratios ${round(perRound, 2)}`,
      },
      {
        name: "run.first.ratio_vs_rg",
        value: round(first.ms / rgMs, 2),
        unit: "x",
      },
      {
        name: "run.record_only.wall",
        value: round(median(times.answer), 0),
        unit: "ms",
        note: `a run that only answers, on the tree (peak ${round(median(rss.answer), 0)} MB)`,
      },
      {
        name: "run.empty.wall",
        value: round(median(times.empty), 0),
        unit: "ms",
        note: `the same on an empty workspace (peak ${round(median(rss.empty), 0)} MB)`,
      },
    ];
  } finally {
    rmSync(scripts, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  for (const row of await benchWorkspaceRun())
    process.stdout.write(`${row.name}\t${row.value} ${row.unit}\t${row.note ?? ""}\n`);
}
