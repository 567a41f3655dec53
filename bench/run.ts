// `npm run bench`: every benchmark in one run, printed as one table (and --json for scripts).
import { benchAcceptance } from "./acceptance.js";
import { benchAcp } from "./acp.js";
import { benchAgentCopy } from "./agents.js";
import { benchBackground } from "./background.js";
import { benchBatch } from "./batch.js";
import { benchChat } from "./chat.js";
import { benchContext } from "./context.js";
import { benchEffects } from "./effects.js";
import { benchEgress } from "./egress.js";
import { benchFleet } from "./fleet.js";
import { benchGrep } from "./grep.js";
import { benchGroupCommit } from "./group-commit.js";
import { benchJournal } from "./journal.js";
import { benchLargeRead } from "./large-file.js";
import { benchMcp } from "./mcp.js";
import { benchMemory } from "./memory.js";
import { benchNetns } from "./netns.js";
import { benchOtel } from "./otel.js";
import { benchPg } from "./pg.js";
import { benchPolicy } from "./policy.js";
import { benchRuntime } from "./runtime.js";
import { benchServer } from "./server.js";
import { benchSteps, benchVersion } from "./session.js";
import { benchShell } from "./shell.js";
import type { BenchRow } from "./stats.js";
import { benchToolsCatalog } from "./tools-catalog.js";
import { benchWorkspaceRun } from "./workspace-run.js";

const sections: [string, () => Promise<BenchRow[]> | BenchRow[]][] = [
  ["journal (issue 2: a, c)", benchJournal],
  ["session steps (issue 2: b)", benchSteps],
  ["start-up (issue 2: d)", benchVersion],
  ["tool runtime (issue 3)", benchRuntime],
  ["shell and sandbox (issue 4)", benchShell],
  ["shell rules on parsed commands (issue 10)", benchPolicy],
  ["acceptance sandboxed vs unsandboxed (issue 10)", benchAcceptance],
  ["context: cacheable requests and build time (issue 12)", benchContext],
  [
    "memory: RSS at step 100 vs step 3,000 of one long session, 50 sessions x 1,000 steps in one process (issue 35)",
    benchMemory,
  ],
  ["MCP tool call through harness vs the SDK directly (issue 13)", benchMcp],
  ["journal: fenced PostgreSQL append vs local fsync (issue 16)", benchPg],
  ["read_file on a large file (issue 17)", benchLargeRead],
  ["chat: Enter to first streamed character, idle CPU (issue 14)", benchChat],
  ["grep and glob vs ripgrep on a 50k-file tree (issue 17)", benchGrep],
  [
    "workspace run: harness run with one grep call on a 50k-file tree vs rg, first and later runs, peak RSS (issue 35)",
    benchWorkspaceRun,
  ],
  ["fleet: sessions through the PostgreSQL queue, 1 vs 4 workers (issue 16)", benchFleet],
  ["server: events through harness serve to one client vs harness run --events (issue 15)", benchServer],
  ["workspace effects: tree compared around a shell call on a 50k-file tree (issue 18)", benchEffects],
  [
    "agents: starting a writing child on a 10,000-file workspace vs a plain recursive copy (issue 31)",
    benchAgentCopy,
  ],
  ["batch: one program of 50 reads vs 50 model-level reads (issue 32)", benchBatch],
  [
    "egress: a 50 MB download through the network proxy vs direct, and connection set-up (issue 33)",
    benchEgress,
  ],
  ["netns: a sandboxed call joining the session's network namespace vs a fresh one (issue 34)", benchNetns],
  [
    "background processes: readiness latency (log, port) beside a plain shell call, per-turn comparison on 10,000 files (issue 34)",
    benchBackground,
  ],
  [
    "tools catalog: first-request tool tokens deferred vs all up front, cacheable prefix with loads (issue 32)",
    benchToolsCatalog,
  ],
  ["acp: per-update overhead of harness acp vs harness run --events (issue 36)", benchAcp],
  ["otel: per-step overhead of live OpenTelemetry export, on vs off in one run (issue 37)", benchOtel],
  [
    "group commit: 16 sessions in one process vs one after another vs cores x an unsynced session (issue 35)",
    benchGroupCommit,
  ],
];

const json = process.argv.includes("--json");
// `npm run bench -- --only mcp`: the sections whose title contains the word, compared on letters
// and digits only (`startup` finds "start-up").
const words = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, "");
const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined;
const results: { section: string; rows: BenchRow[] }[] = [];
for (const [section, run] of sections) {
  if (only !== undefined && !words(section).includes(words(only))) continue;
  process.stderr.write(`running: ${section}...\n`);
  try {
    results.push({ section, rows: await run() });
  } catch (error) {
    results.push({
      section,
      rows: [{ name: "failed", value: Number.NaN, unit: "", note: (error as Error).message }],
    });
  }
}
if (json) {
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} else {
  const width = Math.max(...results.flatMap((r) => r.rows.map((row) => row.name.length)));
  for (const { section, rows } of results) {
    process.stdout.write(`\n${section}\n`);
    for (const row of rows) {
      const value = `${row.value} ${row.unit}`.padStart(14);
      process.stdout.write(`  ${row.name.padEnd(width)} ${value}${row.note ? `   (${row.note})` : ""}\n`);
    }
  }
}
