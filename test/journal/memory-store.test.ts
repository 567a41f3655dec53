import { MemoryJournalStore } from "../../src/journal/memory-store.js";
import { journalContract } from "./contract.js";

journalContract("MemoryJournalStore", async (now) => {
  const backend = new MemoryJournalStore({ now });
  const stored = (sessionId: string) => {
    const lines = backend.linesOf(sessionId);
    if (!lines) throw new Error(`no session ${sessionId}`);
    return lines;
  };
  return {
    store: backend,
    syncs: () => backend.syncs.fsyncs,
    reopen: () => backend,
    key: backend.key,
    withKey: (key) => backend.withKey(key),
    lines: async (sessionId) => [...stored(sessionId)],
    replaceLines: async (sessionId, lines) => {
      stored(sessionId).splice(0, Infinity, ...lines);
    },
    dropWriterLock: async (sessionId) => backend.clearWriter(sessionId),
    cleanup: async () => {},
  };
});
