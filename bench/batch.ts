// Bulk evidence (issue 32): one `batch` call whose program reads 50 files, against the model
// reading the same 50 files itself, one read per reply (a round trip each), in one run. Both
// through a whole session: pipeline, policy, journal. Reported: wall time, calls journaled,
// model requests, journal records, and the ratio of wall times.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AnyRecord } from "../src/journal/vocabulary.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { createSession } from "../src/session/create.js";
import { type BenchRow, median, round } from "./stats.js";

const FILES = 50;
const ROUNDS = 3;
const PATHS = Array.from({ length: FILES }, (_, i) => `src/m${i}.ts`);

interface Measured {
  ms: number;
  calls: number;
  requests: number;
  records: number;
}

async function measure(root: string, env: NodeJS.ProcessEnv, kind: "batch" | "model"): Promise<Measured> {
  // Independent reads, so the program issues them together (8 run at once, the rest wait their turn).
  const program = `const read = await Promise.all(${JSON.stringify(PATHS)}.map((path) => tools.read_file({ path })));
    return { legacy: read.filter((r) => r.content.includes("legacy")).length };`;
  const provider = ScriptedProvider.fromFunction((_messages, step) => {
    if (kind === "batch") {
      return step === 0
        ? { text: "", calls: [{ id: "b", name: "batch", arguments: { program, expected: FILES } }] }
        : { text: "done" };
    }
    const file = PATHS[step];
    return file === undefined
      ? { text: "done" }
      : { text: "", calls: [{ id: `r${step}`, name: "read_file", arguments: { path: file } }] };
  }, `bench-${kind}`);
  const session = await createSession(
    { write: "allow", tools: "readonly", limits: { maxModelRequests: FILES + 10, maxToolCalls: FILES * 3 } },
    { workspace: root, provider, env },
  );
  const records: AnyRecord[] = [];
  const began = performance.now();
  await session.turn("count the legacy modules", { record: (record) => records.push(record) });
  const ms = performance.now() - began;
  return {
    ms,
    calls: records.filter((r) => r.type === "tool.started").length,
    requests: records.filter((r) => r.type === "model.started").length,
    records: records.length,
  };
}

export async function benchBatch(): Promise<BenchRow[]> {
  const scratch = mkdtempSync(path.join(tmpdir(), "harness-bench-batch-"));
  try {
    const root = path.join(scratch, "ws");
    mkdirSync(path.join(root, "src"), { recursive: true });
    for (const [i, file] of PATHS.entries()) {
      const lines = Array.from(
        { length: 40 },
        (_, n) => `export const v${n} = ${i % 5 === 0 ? "'legacy'" : n};`,
      );
      writeFileSync(path.join(root, file), `${lines.join("\n")}\n`);
    }
    writeFileSync(path.join(scratch, "config.json"), "{}");
    const env = { ...process.env, HARNESS_CONFIG: path.join(scratch, "config.json") };
    // The first run pays for loading the interpreter; it is not counted.
    await measure(root, env, "batch");
    const batch: Measured[] = [];
    const model: Measured[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      batch.push(await measure(root, env, "batch"));
      model.push(await measure(root, env, "model"));
    }
    const batchMs = median(batch.map((m) => m.ms));
    const modelMs = median(model.map((m) => m.ms));
    const last = (runs: Measured[]) => runs.at(-1) as Measured;
    return [
      {
        name: "one batch of 50 reads: wall time",
        value: round(batchMs),
        unit: "ms",
        note: `median of ${ROUNDS}`,
      },
      {
        name: "50 model-level reads: wall time",
        value: round(modelMs),
        unit: "ms",
        note: "one read per reply",
      },
      {
        name: "model-level / batch wall time",
        value: round(modelMs / batchMs),
        unit: "x",
        note: "scripted model: no model latency; a real model adds a round trip per read",
      },
      {
        name: "batch: calls journaled",
        value: last(batch).calls,
        unit: "calls",
        note: "1 batch + 50 sub-calls",
      },
      { name: "model-level: calls journaled", value: last(model).calls, unit: "calls" },
      { name: "batch: model requests", value: last(batch).requests, unit: "requests" },
      { name: "model-level: model requests", value: last(model).requests, unit: "requests" },
      { name: "batch: journal records", value: last(batch).records, unit: "records" },
      { name: "model-level: journal records", value: last(model).records, unit: "records" },
    ];
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
