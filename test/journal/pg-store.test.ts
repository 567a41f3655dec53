import { JournalKey } from "../../src/journal/key.js";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import { tempPgSchema } from "../support/pg.js";
import { journalContract } from "./contract.js";

journalContract("PgJournalStore", async (now) => {
  const db = await tempPgSchema();
  const key = JournalKey.ephemeral();
  const backend = new PgJournalStore(db.pool, { now, key });
  return {
    store: backend,
    reopen: () => new PgJournalStore(db.newPool(), { now, key }),
    key,
    withKey: (other) => new PgJournalStore(db.pool, { now, key: other }),
    lines: async (sessionId) =>
      (
        await db.pool.query<{ line: string }>(
          "SELECT line FROM harness_records WHERE session_id = $1 ORDER BY seq",
          [sessionId],
        )
      ).rows.map((row) => row.line),
    replaceLines: async (sessionId, lines) => {
      await db.pool.query("DELETE FROM harness_records WHERE session_id = $1", [sessionId]);
      for (const [seq, line] of lines.entries()) {
        const hash = (JSON.parse(line) as { hash: string }).hash;
        await db.pool.query(
          "INSERT INTO harness_records (session_id, seq, hash, line) VALUES ($1, $2, $3, $4)",
          [sessionId, seq, hash, line],
        );
      }
      await db.pool.query("UPDATE harness_sessions SET next_seq = $2 WHERE session_id = $1", [
        sessionId,
        lines.length,
      ]);
    },
    dropWriterLock: async (sessionId) => {
      await db.pool.query(
        "UPDATE harness_sessions SET writer = NULL, writer_token = NULL WHERE session_id = $1",
        [sessionId],
      );
    },
    cleanup: () => db.cleanup(),
  };
});
