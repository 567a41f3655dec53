import { MemoryJournalBackend } from "../../src/journal/memory-store.js";
import { journalContract } from "./contract.js";

journalContract("MemoryJournalBackend", async (now) => {
  const backend = new MemoryJournalBackend({ now });
  return { backend, reopen: () => backend, cleanup: async () => {} };
});
