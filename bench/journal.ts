import {
  closeSync,
  constants,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { encodeRecord } from "../src/journal/codec.js";
import { FileJournalStore } from "../src/journal/file-store.js";
import { JournalKey } from "../src/journal/key.js";
import { sessionPaths } from "../src/journal/session-path.js";
import { type AnyNewEvent, event, GENESIS_HASH } from "../src/journal/vocabulary.js";

/** Records written directly by the benchmark must authenticate under the key the backend loads with. */
const BENCH_KEY = JournalKey.ephemeral();

export type BenchRow = { name: string; value: number; unit: string; note?: string };

// Enough warm-up appends for the encoder to be JIT-compiled, as in a long session.
const APPEND_WARMUP = 200;
const APPEND_SAMPLES = 500;
const LOAD_RUNS = 3;
const LOAD_SIZES = [100_000, 200_000];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function round(value: number, digits = 3): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** A tool.result whose journal line is about 300 bytes. */
function smallEvent(i: number): AnyNewEvent {
  return event("tool.result", {
    call_id: `call_${i % 1000}`,
    name: "read_file",
    status: "ok",
    summary: "read 1 line",
    content: "export const a = 42;\n",
    duration_ms: 3,
  });
}

/** A realistic mix for the load test: model replies, tool starts and results. */
function mixedEvent(i: number): AnyNewEvent {
  const callId = `call_${i}`;
  switch (i % 3) {
    case 0:
      return event("model.reply", {
        step: i,
        text: "I will read the file first.",
        calls: [{ id: callId, name: "read_file", arguments: { path: "src/index.ts" } }],
        stop_reason: "tool_calls",
        usage: { input_tokens: 1200, output_tokens: 40 },
      });
    case 1:
      return event("tool.started", {
        call_id: callId,
        name: "read_file",
        arguments: { path: "src/index.ts" },
        arguments_hash: "a".repeat(64),
        tool_version: "1",
        schema_digest: "b".repeat(64),
        effect: "read",
        batch: i,
      });
    default:
      return smallEvent(i);
  }
}

async function benchAppend(root: string): Promise<BenchRow[]> {
  const backend = new FileJournalStore(join(root, "append", ".harness"), { key: BENCH_KEY });
  const writer = await backend.openWriter("append-bench", { create: true });
  const rawDir = join(root, "raw");
  mkdirSync(rawDir, { recursive: true });
  const rawFd = openSync(
    join(rawDir, "raw.jsonl"),
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT,
    0o600,
  );
  const sample = encodeRecord(smallEvent(1), 1000, GENESIS_HASH, new Date(), BENCH_KEY);
  const rawBytes = Buffer.from(sample.line, "utf8");
  const journalTimes: number[] = [];
  const rawTimes: number[] = [];
  try {
    // Interleave the two so that disk noise hits both alike, each first in every other pair: an
    // fsync right after another one measures about a fifth faster than one after other work, so
    // a fixed order favoured whichever came second.
    const rawAppend = () => {
      writeSync(rawFd, rawBytes);
      fsyncSync(rawFd);
    };
    for (let i = 0; i < APPEND_WARMUP + APPEND_SAMPLES; i++) {
      const rawFirst = i % 2 === 1;
      const t0 = performance.now();
      if (rawFirst) rawAppend();
      else await writer.append([smallEvent(i)]);
      const t1 = performance.now();
      if (rawFirst) await writer.append([smallEvent(i)]);
      else rawAppend();
      const t2 = performance.now();
      if (i >= APPEND_WARMUP) {
        journalTimes.push(rawFirst ? t2 - t1 : t1 - t0);
        rawTimes.push(rawFirst ? t1 - t0 : t2 - t1);
      }
    }
  } finally {
    closeSync(rawFd);
    await writer.close();
  }
  const journal = median(journalTimes);
  const raw = median(rawTimes);
  const note = `${APPEND_SAMPLES} samples, ${rawBytes.length}-byte line`;
  return [
    { name: "journal.append_fsync.median", value: round(journal), unit: "ms", note },
    { name: "journal.raw_append_fsync.median", value: round(raw), unit: "ms", note },
    { name: "journal.append_vs_raw", value: round(journal / raw, 2), unit: "x", note: "goal <= 1.2" },
  ];
}

/** Write a valid journal of `count` records directly: no lock, one fsync-free file write per chunk. */
function writeBigJournal(harnessDir: string, sessionId: string, count: number): void {
  const paths = sessionPaths(harnessDir, sessionId);
  mkdirSync(paths.sessionDir, { recursive: true });
  const fd = openSync(paths.events, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
  try {
    let prev = GENESIS_HASH;
    let chunk: string[] = [];
    const start = Date.parse("2025-01-01T00:00:00.000Z");
    for (let seq = 0; seq < count; seq++) {
      const { record, line } = encodeRecord(mixedEvent(seq), seq, prev, new Date(start + seq), BENCH_KEY);
      prev = record.hash;
      chunk.push(line);
      if (chunk.length === 10_000 || seq === count - 1) {
        writeSync(fd, chunk.join(""));
        chunk = [];
      }
    }
  } finally {
    closeSync(fd);
  }
}

/** Start each load from a clean heap when the runner exposes gc (node --expose-gc). */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function benchLoad(root: string): Promise<BenchRow[]> {
  const harnessDir = join(root, "load", ".harness");
  const backend = new FileJournalStore(harnessDir, { key: BENCH_KEY });
  const rows: BenchRow[] = [];
  const perHundredK: number[] = [];
  for (const count of LOAD_SIZES) {
    const sessionId = `load-${count}`;
    writeBigJournal(harnessDir, sessionId, count);
    const times: number[] = [];
    const cpuTimes: number[] = [];
    for (let run = 0; run < LOAD_RUNS; run++) {
      collectGarbage();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const records = await backend.read(sessionId);
      times.push(performance.now() - t0);
      const cpu = process.cpuUsage(cpu0);
      cpuTimes.push((cpu.user + cpu.system) / 1000);
      if (records.length !== count) throw new Error(`loaded ${records.length} of ${count} records`);
    }
    const ms = median(times);
    const label = `journal.load_verify.${count / 1000}k`;
    perHundredK.push((ms * 100_000) / count);
    rows.push({
      name: label,
      value: round(ms, 1),
      unit: "ms",
      note: `median of ${LOAD_RUNS} read() calls (read file + verify every record); first ${round(times[0]!, 0)} ms`,
    });
    rows.push({
      name: `${label}.per_100k`,
      value: round((ms * 100_000) / count, 1),
      unit: "ms",
      note: "goal <= 1000",
    });
    rows.push({
      name: `${label}.cpu`,
      value: round(median(cpuTimes), 1),
      unit: "ms",
      note: "process CPU time (all threads) of the same calls; less sensitive to a busy machine",
    });
  }
  const [small, large] = perHundredK;
  if (small !== undefined && large !== undefined) {
    rows.push({
      name: "journal.load_verify.scaling",
      value: round(large / small, 2),
      unit: "x",
      note: "per-100k time of 200k over 100k; 1.0 is linear",
    });
  }
  return rows;
}

export async function benchJournal(): Promise<BenchRow[]> {
  const root = mkdtempSync(join(tmpdir(), "harness-journal-bench-"));
  try {
    return [...(await benchAppend(root)), ...(await benchLoad(root))];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await benchJournal()) {
    console.log(`${row.name}\t${row.value} ${row.unit}${row.note ? `\t(${row.note})` : ""}`);
  }
}
