// grep and glob at repository scale (issue 17): the grep tool through ripgrep and through the
// JavaScript fallback, against `rg` run directly, on a generated tree of ~50k files.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SessionGrants } from "../src/policy/grants.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { readAccess } from "../src/runtime/authorize.js";
import { createToolContext } from "../src/tools/context.js";
import { createGlobTool } from "../src/tools/files/glob.js";
import { createGrepTool, type GrepEngine } from "../src/tools/files/grep.js";
import { locateRipgrep } from "../src/tools/files/search/ripgrep.js";
import type { ToolContext } from "../src/tools/tool.js";
import { DiskWorkspaceFs } from "../src/workspace/disk-fs.js";
import { type BenchRow, median, round } from "./stats.js";

/** Bump when the tree's recipe changes: the cached tree under /tmp is rebuilt. */
const TREE_VERSION = 1;
const TARGET_FILES = 50_000;
const RUNS = 3;
const CASES = [
  { label: "literal", pattern: "process.nextTick" },
  { label: "regex", pattern: "Symbol\\.for\\([\"']\\w+" },
];

/** A tree of copies of this repository's node_modules, built once and kept between runs. */
export function benchTree(): { root: string; files: number } {
  const root = path.join(tmpdir(), `harness-bench-grep-v${TREE_VERSION}`);
  const marker = path.join(root, ".bench-complete");
  if (existsSync(marker)) return { root, files: countFiles(root) };
  rmSync(root, { recursive: true, force: true });
  const source = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../node_modules");
  const sources = listFiles(source);
  let files = 0;
  for (let copy = 0; files < TARGET_FILES; copy++) {
    for (const file of sources) {
      if (files >= TARGET_FILES) break;
      const target = path.join(root, `copy${copy}`, path.relative(source, file));
      mkdirSync(path.dirname(target), { recursive: true });
      copyFileSync(file, target);
      files++;
    }
  }
  writeFileSync(path.join(root, ".gitignore"), "*.log\n");
  writeFileSync(path.join(root, ".env"), "SECRET=process.nextTick\n");
  writeFileSync(marker, "");
  return { root, files: countFiles(root) };
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(full));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

function countFiles(dir: string): number {
  let count = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) count += countFiles(path.join(dir, entry.name));
    else if (entry.isFile()) count++;
  }
  return count;
}

async function contextFor(root: string): Promise<ToolContext> {
  const fs = await DiskWorkspaceFs.create(root);
  const permissions = modePolicy({});
  const grants = new SessionGrants();
  return createToolContext({
    callId: "bench",
    signal: new AbortController().signal,
    fs,
    observedVersion: () => undefined,
    artifacts: {
      read: async () => undefined,
      put: async () => ({ id: "", sha256: "", bytes: 0 }),
      open: async () => {
        throw new Error("unused");
      },
    },
    readAccess: (file) => readAccess(file, { permissions, grants }),
  } as Parameters<typeof createToolContext>[0]);
}

function timedSync(action: () => void): number {
  const start = performance.now();
  action();
  return performance.now() - start;
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await action();
  return performance.now() - start;
}

export async function benchGrep(): Promise<BenchRow[]> {
  const rg = locateRipgrep();
  if (rg === undefined)
    return [{ name: "grep.ripgrep", value: Number.NaN, unit: "", note: "rg is not installed" }];
  const built = performance.now();
  const { root, files } = benchTree();
  const buildMs = performance.now() - built;
  const bytes = Number(spawnSync("du", ["-sb", root], { encoding: "utf8" }).stdout.split("\t")[0]);
  const context = await contextFor(root);
  const rows: BenchRow[] = [
    {
      name: "grep.tree.files",
      value: files,
      unit: "files",
      note: `${round(bytes / 1e9, 2)} GB; ${root}${buildMs > 1000 ? `; built in ${round(buildMs / 1000, 1)} s` : ", cached"}`,
    },
  ];
  const tools: Record<Exclude<GrepEngine, "auto">, ReturnType<typeof createGrepTool>> = {
    ripgrep: createGrepTool({ engine: "ripgrep" }),
    javascript: createGrepTool({ engine: "javascript" }),
  };
  for (const { label, pattern } of CASES) {
    const runRg = (): void => {
      const result = spawnSync(rg, ["--hidden", "--no-require-git", "-n", "-e", pattern, "./"], {
        cwd: root,
        maxBuffer: 1 << 30,
      });
      if (result.status !== 0) throw new Error(`rg failed: ${result.stderr}`);
    };
    runRg(); // warm the page cache
    const times = { rg: [] as number[], ripgrep: [] as number[], javascript: [] as number[] };
    let matches = "";
    for (let run = 0; run < RUNS; run++) {
      times.rg.push(timedSync(runRg));
      for (const engine of ["ripgrep", "javascript"] as const) {
        let summary = "";
        times[engine].push(
          await timed(async () => {
            summary = (await tools[engine].execute({ pattern, max_results: 2000 }, context)).summary;
          }),
        );
        if (engine === "ripgrep") matches = summary;
        else if (summary !== matches) throw new Error(`the engines disagree: ${matches} / ${summary}`);
      }
    }
    const rgMs = median(times.rg);
    const viaRg = median(times.ripgrep);
    const viaJs = median(times.javascript);
    rows.push(
      {
        name: `grep.${label}.rg_direct`,
        value: round(rgMs, 1),
        unit: "ms",
        note: `median of ${RUNS}; ${pattern}`,
      },
      { name: `grep.${label}.tool_ripgrep`, value: round(viaRg, 1), unit: "ms", note: matches },
      { name: `grep.${label}.tool_javascript`, value: round(viaJs, 1), unit: "ms" },
      {
        name: `grep.${label}.ratio.ripgrep_vs_rg`,
        value: round(viaRg / rgMs, 2),
        unit: "x",
        note: "goal <= 3",
      },
      {
        name: `grep.${label}.ratio.javascript_vs_rg`,
        value: round(viaJs / rgMs, 2),
        unit: "x",
        note: "goal <= 10",
      },
    );
  }
  const glob = createGlobTool({ engine: "ripgrep" });
  const crawl = createGlobTool({ engine: "javascript" });
  const globTimes = { rg: [] as number[], tool: [] as number[], crawl: [] as number[] };
  let globSummary = "";
  for (let run = 0; run < RUNS; run++) {
    globTimes.rg.push(
      timedSync(() =>
        spawnSync(rg, ["--files", "--hidden", "--no-require-git", "-g", "*.ts", "./"], {
          cwd: root,
          maxBuffer: 1 << 30,
        }),
      ),
    );
    globTimes.tool.push(
      await timed(async () => {
        globSummary = (await glob.execute({ pattern: "**/*.ts" }, context)).summary;
      }),
    );
    let crawled = "";
    globTimes.crawl.push(
      await timed(async () => {
        crawled = (await crawl.execute({ pattern: "**/*.ts" }, context)).content;
      }),
    );
    // Both ways of listing must give the same answer, path for path.
    if (crawled !== (await glob.execute({ pattern: "**/*.ts" }, context)).content)
      throw new Error("glob through rg and the crawl disagree");
  }
  rows.push(
    {
      name: "glob.ts_files.rg_files",
      value: round(median(globTimes.rg), 1),
      unit: "ms",
      note: "rg --files -g '*.ts'",
    },
    { name: "glob.ts_files.tool", value: round(median(globTimes.tool), 1), unit: "ms", note: globSummary },
    {
      name: "glob.ts_files.tool_crawl",
      value: round(median(globTimes.crawl), 1),
      unit: "ms",
      note: "without rg (the fallback)",
    },
    {
      name: "glob.ts_files.ratio.tool_vs_rg",
      value: round(median(globTimes.tool) / median(globTimes.rg), 2),
      unit: "x",
      note: "goal <= 3",
    },
  );
  return rows;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  for (const row of await benchGrep())
    process.stdout.write(`${row.name}\t${row.value} ${row.unit}\t${row.note ?? ""}\n`);
}
