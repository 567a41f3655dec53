import type { ArtifactStore } from "../artifacts/store.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import { type ChangeSet, type Entry, isFile, sameEntry } from "../workspace/manifest.js";
import { currentEntry, type TreeMode } from "./disk.js";

/**
 * A session's recorded workspace changes read back as history: what each turn and each call
 * changed, the net change between two points, and which undo a redo takes back. Everything here
 * is folded from the journal's `workspace.changed` records (the one record of what changed);
 * nothing reads the tree but `recordedContent`, which fetches a recorded entry's bytes.
 */

/** One path's change: what it held before (null: absent) and after (null: deleted). */
export interface PathChange {
  path: string;
  before: Entry | null;
  after: Entry | null;
}

/** What one call (or an undo, a hook, an outside change) changed, in record order. */
export interface CallChanges {
  /** The call id as journaled (`undo:ID` for an undo, `outside:SEQ` for an outside change). */
  callId: string;
  /** The tool's name for a model's call; undefined for an undo, a hook or an outside change. */
  tool?: string;
  source: string;
  /** The record of its (first) change: where `undo --to` returns to is just before the call. */
  seq: number;
  changes: PathChange[];
}

/** A turn of the session: its number, what was typed, and the changes recorded during it. */
export interface TurnChanges {
  turn: number;
  text: string;
  /** The `user.input` record that started it. */
  seq: number;
  calls: CallChanges[];
}

/**
 * Every turn with the calls that changed the workspace during it (from its input up to the
 * next turn's), each call's paths folded (a call that wrote a file twice shows once). Changes
 * recorded before the first input (none, in a session harness started) belong to no turn.
 */
export function turnHistory(records: readonly AnyRecord[]): TurnChanges[] {
  const turns: TurnChanges[] = [];
  const tools = new Map<string, string>();
  let current: TurnChanges | undefined;
  for (const record of records) {
    if (record.type === "user.input") {
      current = { turn: turns.length + 1, text: record.data.text, seq: record.seq, calls: [] };
      turns.push(current);
    } else if (record.type === "tool.started") {
      tools.set(record.data.call_id, record.data.name);
    } else if (record.type === "workspace.changed" && current !== undefined) {
      const callId = record.data.call_id;
      let call = current.calls.find((c) => c.callId === callId);
      if (call === undefined) {
        const tool = tools.get(callId);
        call = {
          callId,
          ...(tool !== undefined ? { tool } : {}),
          source: record.data.source,
          seq: record.seq,
          changes: [],
        };
        current.calls.push(call);
      }
      call.changes = foldInto(call.changes, changeList(record.data));
    }
  }
  return turns;
}

/**
 * The net change of every path the record changed after record `from` up to and including record
 * `until`: per path, what it held before the first change and after the last. Paths that came
 * back to what they were are left out. Sorted by path.
 */
export function netChanges(
  records: readonly AnyRecord[],
  from: number,
  until = Number.POSITIVE_INFINITY,
): PathChange[] {
  let folded: PathChange[] = [];
  for (const record of records) {
    if (record.seq <= from || record.seq > until || record.type !== "workspace.changed") continue;
    folded = foldInto(folded, changeList(record.data));
  }
  return folded
    .filter((c) => !sameEntry(c.before ?? undefined, c.after ?? undefined))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The records a turn spans: after the record before its input, up to the record before the next turn's. */
export function turnSpan(
  records: readonly AnyRecord[],
  turn: number,
): { from: number; until: number } | undefined {
  const inputs = records.filter((r) => r.type === "user.input");
  const input = inputs[turn - 1];
  if (input === undefined) return undefined;
  const next = inputs[turn];
  return { from: input.seq - 1, until: next === undefined ? Number.POSITIVE_INFINITY : next.seq - 1 };
}

/**
 * The undo a redo takes back: the latest undo not yet taken back, as long as nothing but undos
 * changed the workspace after it (a redo then would undo those changes too). A redo is itself an
 * undo, of the record just before the undo it takes back (`undo --to undo:ID`), so undos and
 * redos stack: undo A, undo B, redo (takes back B), redo (takes back A).
 */
export function redoable(records: readonly AnyRecord[]): string | undefined {
  const startedAt = new Map<number, string>();
  const stack: string[] = [];
  for (const record of records) {
    if (record.type === "undo.started") {
      // A redo returns to the record just before the undo.started of the undo it takes back.
      const undone = startedAt.get(record.data.target.seq + 1);
      startedAt.set(record.seq, record.data.undo_id);
      if (undone !== undefined && stack[stack.length - 1] === undone) stack.pop();
      else stack.push(record.data.undo_id);
    } else if (record.type === "workspace.changed" && record.data.source !== "undo") {
      stack.length = 0;
    }
  }
  return stack[stack.length - 1];
}

/** Where the bytes of a recorded file entry can be found. */
export interface ContentSources {
  /** The session's artifacts: every content a recorded change replaced. */
  artifacts: ArtifactStore;
  /** The workspace recording's kept copies (its object store), checked against the hash. */
  kept?: (hash: string) => Uint8Array | undefined;
  /** The workspace's root: a file still holding that content is read beneath it (never through a link). */
  root: string;
  mode: TreeMode;
}

/**
 * The bytes of a recorded file entry at `path`: from the artifacts, the kept copies, or the
 * workspace when its file still has that hash; undefined when none holds them (or the entry is
 * not a file: a directory, a link, an entry held by kind or size only).
 */
export async function recordedContent(
  sources: ContentSources,
  path: string,
  entry: Entry | null,
): Promise<Uint8Array | undefined> {
  if (entry === null || !isFile(entry)) return undefined;
  const stored = (await sources.artifacts.read(entry.hash)) ?? sources.kept?.(entry.hash);
  if (stored !== undefined) return stored;
  const now = await currentEntry(sources.root, path, sources.mode).catch(() => undefined);
  if (now?.entry === null || now === undefined || !isFile(now.entry) || now.entry.hash !== entry.hash)
    return undefined;
  return now.bytes;
}

function changeList(change: ChangeSet): PathChange[] {
  return [
    ...change.created.map((c) => ({ path: c.path, before: null, after: c.after })),
    ...change.modified.map((m) => ({ path: m.path, before: m.before, after: m.after })),
    ...change.deleted.map((d) => ({ path: d.path, before: d.before, after: null })),
  ];
}

/** Older changes folded with newer ones: a path keeps its first `before` and takes the latest `after`. */
function foldInto(older: PathChange[], newer: readonly PathChange[]): PathChange[] {
  const byPath = new Map(older.map((c) => [c.path, { ...c }]));
  for (const change of newer) {
    const known = byPath.get(change.path);
    if (known) known.after = change.after;
    else byPath.set(change.path, { ...change });
  }
  return [...byPath.values()];
}
