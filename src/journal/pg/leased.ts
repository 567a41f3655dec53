import type { JournalStore, JournalWriter, OpenWriterOptions } from "../store.js";
import { event } from "../vocabulary.js";
import type { Lease } from "./lease.js";
import type { PgJournalStore } from "./store.js";

/**
 * The store a worker hands the engine for the session it holds a lease on: every writer it opens
 * is fenced by the lease, and opening a session that already has records (a takeover, or the
 * worker resuming its own) first journals `lease.acquired`, so the journal says which epoch wrote
 * what follows. A new session gets none: its first record must be `session.started`, and epoch 1
 * with no previous owner is what a session without the record means.
 */
export function leasedStore(store: PgJournalStore, lease: Lease): JournalStore {
  return {
    async openWriter(sessionId: string, options: OpenWriterOptions): Promise<JournalWriter> {
      const writer = await store.openWriter(sessionId, { ...options, lease });
      if (writer.length === 0 || options.adopt === true) return writer;
      try {
        await writer.append([
          event("lease.acquired", { epoch: lease.epoch, owner: lease.owner, previous: lease.previous }),
        ]);
      } catch (error) {
        await writer.close().catch(() => {});
        throw error;
      }
      return writer;
    },
    read: (sessionId) => store.read(sessionId),
    readReport: (sessionId) => store.readReport(sessionId),
    exists: (sessionId) => store.exists(sessionId),
    list: () => store.list(),
    listChildren: (sessionId) => store.listChildren(sessionId),
  };
}
