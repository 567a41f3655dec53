import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeRecord } from "../../src/journal/codec.js";
import { FileJournalStore } from "../../src/journal/file-store.js";
import { loadJournalKey } from "../../src/journal/key-file.js";
import { sessionPaths } from "../../src/journal/session-path.js";
import { type AnyNewEvent, GENESIS_HASH } from "../../src/journal/vocabulary.js";
import { canonicalJson, sha256Hex } from "../../src/shared/hash.js";
import type { JsonObject } from "../../src/shared/json.js";
import { fixedClock, input } from "./contract.js";

export interface TempHarness {
  harnessDir: string;
  store: FileJournalStore;
  cleanup(): void;
}

export function tempHarness(now: () => Date = fixedClock()): TempHarness {
  const root = mkdtempSync(join(tmpdir(), "harness-journal-test-"));
  const harnessDir = join(root, ".harness");
  return {
    harnessDir,
    store: new FileJournalStore(harnessDir, { now }),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

export function eventsPath(harnessDir: string, sessionId: string): string {
  return sessionPaths(harnessDir, sessionId).events;
}

export function lockPath(harnessDir: string, sessionId: string): string {
  return sessionPaths(harnessDir, sessionId).lock;
}

/** Create a session holding `count` user.input records through the real writer, then close it. */
export async function seedSession(h: TempHarness, sessionId: string, count: number): Promise<Buffer> {
  const writer = await h.store.openWriter(sessionId, { create: true });
  for (let i = 0; i < count; i++) await writer.append([input(`message ${i}`)]);
  await writer.close();
  return readFileSync(eventsPath(h.harnessDir, sessionId));
}

export function readLines(path: string): string[] {
  const text = readFileSync(path, "utf8");
  return text.split("\n").slice(0, -1);
}

export function writeLines(path: string, lines: readonly string[]): void {
  writeFileSync(path, lines.map((line) => `${line}\n`).join(""));
}

/**
 * A correctly hashed line for arbitrary fields, bypassing the encoder's checks: what a forger who
 * knows the chain algorithm but not the journal key can write (no mac, or `mac` if given).
 */
export function forgeLine(fields: {
  seq: number;
  type: string;
  data: JsonObject;
  prev: string;
  time?: string;
  mac?: string;
}): string {
  const { mac, ...rest } = fields;
  const body = { ...rest, time: fields.time ?? "2025-03-01T12:00:00.000Z" };
  return canonicalJson({ ...body, hash: sha256Hex(canonicalJson(body)), ...(mac ? { mac } : {}) });
}

/** The canonical line (without "\n") the writer would produce. */
export function encodedLine(
  event: AnyNewEvent,
  seq: number,
  prev = GENESIS_HASH,
): { line: string; hash: string } {
  const { record, line } = encodeRecord(
    event,
    seq,
    prev,
    new Date("2025-03-01T12:00:00.000Z"),
    loadJournalKey(),
  );
  return { line: line.slice(0, -1), hash: record.hash };
}
