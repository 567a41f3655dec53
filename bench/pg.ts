// The cost of a fenced PostgreSQL journal append (one transaction: lease row and session row
// locked, expected seq checked, record inserted, committed) against a local fsync'd JSONL append.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { FileJournalStore } from "../src/journal/file-store.js";
import { JournalKey } from "../src/journal/key.js";
import { acquireLease } from "../src/journal/pg/lease.js";
import { ensurePgSchema } from "../src/journal/pg/schema.js";
import { PgJournalStore } from "../src/journal/pg/store.js";
import { event } from "../src/journal/vocabulary.js";
import { type BenchRow, median, round } from "./stats.js";

const WARMUP = 20;
const SAMPLES = 300;
const KEY = JournalKey.ephemeral();

const record = (i: number) => event("user.input", { text: `message ${i}: ${"x".repeat(200)}` });

export async function benchPg(): Promise<BenchRow[]> {
  const url = process.env.HARNESS_TEST_DATABASE_URL;
  if (!url) {
    return [
      {
        name: "pg.append_fenced.median",
        value: Number.NaN,
        unit: "ms",
        note: "skipped: set HARNESS_TEST_DATABASE_URL to a PostgreSQL URL (npm test starts an embedded one for the tests only)",
      },
    ];
  }
  const schema = `harness_bench_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const scoped = new URL(url);
  scoped.searchParams.set("options", `-c search_path=${schema}`);
  const pool = new pg.Pool({ connectionString: scoped.href, max: 2 });
  const root = mkdtempSync(join(tmpdir(), "harness-bench-pg-"));
  try {
    await ensurePgSchema(pool);
    const lease = await acquireLease(pool, "bench", "bench-worker", 60_000);
    if (!lease) throw new Error("could not take the bench session's lease");
    const pgWriter = await new PgJournalStore(pool, { key: KEY }).openWriter("bench", {
      create: true,
      lease,
    });
    const fileWriter = await new FileJournalStore(join(root, ".harness"), { key: KEY }).openWriter(
      "bench",
      {
        create: true,
      },
    );
    const pgTimes: number[] = [];
    const fileTimes: number[] = [];
    // Interleaved so that disk and scheduler noise hit both alike.
    for (let i = 0; i < WARMUP + SAMPLES; i++) {
      const t0 = performance.now();
      await pgWriter.append([record(i)]);
      const t1 = performance.now();
      await fileWriter.append([record(i)]);
      const t2 = performance.now();
      if (i >= WARMUP) {
        pgTimes.push(t1 - t0);
        fileTimes.push(t2 - t1);
      }
    }
    await pgWriter.close();
    await fileWriter.close();
    await lease.release();
    const pgMedian = median(pgTimes);
    const fileMedian = median(fileTimes);
    const note = `${SAMPLES} samples, one ~300-byte record each`;
    return [
      { name: "pg.append_fenced.median", value: round(pgMedian), unit: "ms", note },
      { name: "file.append_fsync.median", value: round(fileMedian), unit: "ms", note },
      {
        name: "pg_fenced_vs_file",
        value: round(pgMedian / fileMedian, 2),
        unit: "x",
        note: "local PostgreSQL",
      },
    ];
  } finally {
    await pool.end();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
    rmSync(root, { recursive: true, force: true });
  }
}
