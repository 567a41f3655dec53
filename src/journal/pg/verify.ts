import type { Pool } from "pg";
import { decodeRecordLine, isRecordFault } from "../codec.js";
import type { VerifyResult } from "../verify.js";
import { type AnyRecord, GENESIS_HASH } from "../vocabulary.js";
import { database, notFound } from "./store.js";

/**
 * Verify a session stored in PostgreSQL record by record, reporting the first fault and the
 * verified prefix the way the file verifier does (`validBytes` counts the prefix's lines as the
 * JSONL file would hold them), for `harness journal verify --database`.
 */
export async function verifyPgJournal(pool: Pool, sessionId: string): Promise<VerifyResult> {
  return (await verifyPgJournalPrefix(pool, sessionId)).result;
}

/**
 * `verifyPgJournal`, with the records of the longest verified prefix (all of them when the journal
 * verifies): what `harness report --database` shows of a damaged journal.
 */
export async function verifyPgJournalPrefix(
  pool: Pool,
  sessionId: string,
): Promise<{ result: VerifyResult; records: AnyRecord[] }> {
  const result = await database(sessionId, "read the journal", async () => {
    const found = await pool.query("SELECT 1 FROM harness_sessions WHERE session_id = $1", [sessionId]);
    if (found.rowCount !== 1) throw notFound(sessionId);
    return pool.query<{ seq: string; line: string }>(
      "SELECT seq, line FROM harness_records WHERE session_id = $1 ORDER BY seq",
      [sessionId],
    );
  });
  const records: AnyRecord[] = [];
  let prev = GENESIS_HASH;
  let validBytes = 0;
  for (const row of result.rows) {
    const seq = records.length;
    const decoded = decodeRecordLine(row.line, seq, prev);
    if (isRecordFault(decoded)) {
      const { fault: code, message } = decoded;
      return { result: { ok: false, code, message, validRecords: seq, validBytes }, records };
    }
    if (Number(row.seq) !== seq) {
      const message = `row seq ${row.seq} holds record seq ${seq}: a record is missing or out of order`;
      return { result: { ok: false, code: "CORRUPT", message, validRecords: seq, validBytes }, records };
    }
    records.push(decoded);
    prev = decoded.hash;
    validBytes += Buffer.byteLength(row.line) + 1;
  }
  return { result: { ok: true, records }, records };
}
