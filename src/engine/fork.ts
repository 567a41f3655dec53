import type { JournalStore } from "../journal/store.js";
import type { AnyNewEvent, AnyRecord } from "../journal/vocabulary.js";
import { EngineError } from "./errors.js";
import { SessionState } from "./state.js";

export interface ForkResult {
  session: string;
  parent: string;
  at_seq: number;
  at_hash: string;
  /** The parent's records copied into the fork (all up to at_seq, but any journal.adopted). */
  copied: number;
}

/**
 * A new session from another's history up to and including record `at` (default: its last). The
 * fork's journal starts with `session.forked` naming the parent and the hash of its record `at`,
 * then holds the parent's records as its own (re-chained and authenticated under this user's key),
 * so it verifies alone; the parent is only read. A cut that leaves a call started without its
 * result is refused: the fork's recovery would otherwise act on a process the parent may still own.
 */
export async function forkSession(
  store: JournalStore,
  parent: string,
  child: string,
  at?: number,
  /** Where the fork lives when it is not beside its parent (harness fork --into): its store and workspace identity. */
  into?: { store: JournalStore; workspace: { name: string; fingerprint: string } },
): Promise<ForkResult> {
  const records = await store.read(parent);
  const last = records.length - 1;
  const seq = at ?? last;
  if (records.length === 0) throw new EngineError("BAD_INPUT", `session "${parent}" has no records to fork`);
  if (!Number.isInteger(seq) || seq < 1 || seq > last) {
    throw new EngineError(
      "BAD_INPUT",
      `--at must name a record of session "${parent}" from 1 (its goal) to ${last}; got ${String(at)}`,
    );
  }
  const prefix = records.slice(0, seq + 1);
  const open = SessionState.from(prefix).startedWithoutResult();
  if (open.length > 0) {
    const call = open[0]!;
    throw new EngineError(
      "BAD_INPUT",
      `record ${seq} is inside a running call (${call.name} ${call.call_id} started, its result not yet recorded); ` +
        "fork before that call's tool.started or after its tool.result",
    );
  }
  const target = into?.store ?? store;
  if (await target.exists(child)) throw new EngineError("BAD_INPUT", `session "${child}" already exists`);
  const at_hash = (records[seq] as AnyRecord).hash;
  // An adoption vouches for the parent's chain under its head; the fork's chain is its own.
  const copied = prefix
    .filter((r) => r.type !== "journal.adopted")
    .map((r) => ({ type: r.type, data: r.data }) as AnyNewEvent);
  const writer = await target.openWriter(child, { create: true });
  const workspace = into ? { workspace: into.workspace } : {};
  try {
    await writer.append([
      {
        type: "session.forked",
        data: { parent, at_seq: seq, at_hash, parent_records: copied.length, ...workspace },
      },
      ...copied,
    ]);
  } finally {
    await writer.close();
  }
  return { session: child, parent, at_seq: seq, at_hash, copied: copied.length };
}
