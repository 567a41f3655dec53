import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { JournalStore, JournalWriter } from "../../src/journal/store.js";
import type { AnyRecord, EventData } from "../../src/journal/vocabulary.js";
import type { Workspace } from "../support/session.js";

export type ResultData = EventData<"tool.result">;
export type StartedData = EventData<"tool.started">;

export function ofType(records: readonly AnyRecord[], type: string): AnyRecord[] {
  return records.filter((r) => r.type === type);
}

export async function results(ws: Workspace, session = "s"): Promise<ResultData[]> {
  return (await ws.events("tool.result", session)).map((r) => r.data as ResultData);
}

export async function starts(ws: Workspace, session = "s"): Promise<StartedData[]> {
  return (await ws.events("tool.started", session)).map((r) => r.data as StartedData);
}

export function resultOf(all: readonly ResultData[], callId: string): ResultData {
  const found = all.filter((r) => r.call_id === callId);
  if (found.length !== 1) throw new Error(`expected one result for ${callId}, found ${found.length}`);
  return found[0]!;
}

/** Milliseconds of a trace timestamp. */
export function traceTime(result: ResultData, key: "started_at" | "ended_at"): number {
  const value = result.trace?.[key];
  if (typeof value !== "string") throw new Error(`result ${result.call_id} has no trace.${key}`);
  return Date.parse(value);
}

/** A backend that records the event types of every `append` its writers make (one entry per fsync). */
export function spyingBackend(inner: JournalStore): { backend: JournalStore; appends: string[][] } {
  const appends: string[][] = [];
  const backend: JournalStore = {
    read: (id) => inner.read(id),
    readReport: (id) => inner.readReport(id),
    exists: (id) => inner.exists(id),
    list: () => inner.list(),
    listChildren: (id) => inner.listChildren(id),
    async openWriter(id, options) {
      const writer = await inner.openWriter(id, options);
      const spied: JournalWriter = {
        get sessionId() {
          return writer.sessionId;
        },
        get length() {
          return writer.length;
        },
        get last() {
          return writer.last;
        },
        get recent() {
          return writer.recent;
        },
        readAll: () => writer.readAll(),
        append(events) {
          appends.push(events.map((e) => e.type));
          return writer.append(events);
        },
        close: () => writer.close(),
        keyId: writer.keyId,
        recoveredLock: writer.recoveredLock,
      };
      return spied;
    },
  };
  return { backend, appends };
}

/** Cut the session's journal right after the first record matching `keep` (a crash there). */
export async function truncateAfter(
  ws: Workspace,
  keep: (record: { type: string; data: Record<string, unknown> }) => boolean,
  session = "s",
): Promise<void> {
  const path = join(ws.root, ".harness", "sessions", session, "events.jsonl");
  const lines = (await readFile(path, "utf8")).split("\n").filter((line) => line.length > 0);
  const index = lines.findIndex((line) => keep(JSON.parse(line)));
  if (index < 0) throw new Error("no record to cut after");
  await writeFile(path, `${lines.slice(0, index + 1).join("\n")}\n`);
}
