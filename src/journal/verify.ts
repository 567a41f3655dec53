import { isUtf8 } from "node:buffer";
import { readFile } from "node:fs/promises";
import { basename, dirname, sep } from "node:path";
import { errnoCode } from "../shared/errno.js";
import { decodeRecordLine, isRecordFault } from "./codec.js";
import { EVENTS_FILE, isRootSessionId, isSessionId, MAX_AGENT_DEPTH } from "./session-path.js";
import { JournalError } from "./store.js";
import { type AnyRecord, GENESIS_HASH } from "./vocabulary.js";

const NEWLINE = 0x0a;

export type JournalFaultCode = "TORN_TAIL" | "CORRUPT" | "TAMPERED";

export type VerifyResult =
  | { ok: true; records: AnyRecord[] }
  | {
      ok: false;
      code: JournalFaultCode;
      message: string;
      /** Records in the longest verified prefix. */
      validRecords: number;
      /** Byte length of that prefix: where a repair truncates. */
      validBytes: number;
    };

/** The command a person runs to repair a damaged journal (shown in messages). */
function repairCommand(sessionId: string): string {
  return `harness journal repair ${sessionId}`;
}

/**
 * Verify a whole journal file's bytes. One pass: each line is located in the buffer, decoded
 * once and checked (see decodeRecordLine). The whole buffer is checked for valid UTF-8 once up
 * front, because decoding would silently turn an invalid byte into U+FFFD and hide the change.
 */
export function verifyJournalBytes(bytes: Buffer, sessionId: string): VerifyResult {
  const records: AnyRecord[] = [];
  const checkEachLine = !isUtf8(bytes);
  let prev = GENESIS_HASH;
  let start = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start);
    const seq = records.length;
    if (end === -1) {
      return {
        ok: false,
        code: "TORN_TAIL",
        message:
          `the journal ends with an incomplete record after seq ${seq - 1} (no final newline; an append was cut short). ` +
          `Nothing was changed. Run \`${repairCommand(sessionId)}\` to cut it off (it keeps a backup first).`,
        validRecords: seq,
        validBytes: start,
      };
    }
    if (checkEachLine && !isUtf8(bytes.subarray(start, end))) {
      return fault(
        "CORRUPT",
        `line ${seq + 1} (expected seq ${seq}) is not valid UTF-8`,
        seq,
        start,
        sessionId,
      );
    }
    const decoded = decodeRecordLine(bytes.toString("utf8", start, end), seq, prev);
    if (isRecordFault(decoded)) return fault(decoded.fault, decoded.message, seq, start, sessionId);
    records.push(decoded);
    prev = decoded.hash;
    start = end + 1;
  }
  return { ok: true, records };
}

function fault(
  code: "CORRUPT" | "TAMPERED",
  message: string,
  validRecords: number,
  validBytes: number,
  sessionId: string,
): VerifyResult {
  const next =
    `Records before seq ${validRecords} verify. Keep the file for inspection; ` +
    `\`${repairCommand(sessionId)}\` would back it up and cut it to those records.`;
  return { ok: false, code, message: `${message}. ${next}`, validRecords, validBytes };
}

/**
 * Guess the session id from `<…>/sessions/<id>/events.jsonl` (a sub-agent's: `sessions/<id>/<label>/…`)
 * for messages; a placeholder otherwise. The longest id that fits wins: a label may itself be "sessions".
 */
function sessionIdOf(path: string): string {
  if (basename(path) !== EVENTS_FILE) return "<session>";
  const parts = dirname(path).split(sep);
  for (let length = Math.min(MAX_AGENT_DEPTH + 1, parts.length - 1); length >= 1; length--) {
    const id = parts.slice(parts.length - length).join("/");
    if (parts[parts.length - length - 1] === "sessions" && isSessionId(id)) return id;
  }
  const folder = basename(dirname(path));
  return isRootSessionId(folder) ? folder : "<session>";
}

/** Verify the journal file at `path` without taking its lock. I/O failures throw JournalError("IO"). */
export async function verifyJournal(path: string): Promise<VerifyResult> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT") throw new JournalError("SESSION_NOT_FOUND", "no journal file at the given path");
    throw new JournalError("IO", `cannot read the journal file (${code ?? "unknown error"})`);
  }
  return verifyJournalBytes(bytes, sessionIdOf(path));
}

/** Turn a failed verification into the error a loader throws, prefixed with the session. */
export function loadError(sessionId: string, result: Extract<VerifyResult, { ok: false }>): JournalError {
  return new JournalError(result.code, `session ${sessionId}: ${result.message}`);
}
