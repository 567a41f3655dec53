import { type CompiledCheck, deferredCheck } from "../shared/compiled-check.js";
import { type CanonicalForm, canonicalForm, canonicalJson, sha256Hex } from "../shared/hash.js";
import { isJsonObject } from "../shared/json.js";
import type { JournalKey } from "./key.js";
import { JournalError } from "./store.js";
import {
  type AnyNewEvent,
  type AnyRecord,
  EVENT_SCHEMAS,
  type EventType,
  isEventType,
} from "./vocabulary.js";

/**
 * One journal line is the RFC 8785 canonical JSON of the whole record plus "\n". Canonical key
 * order is data, hash, mac, prev, seq, time, type, so the hashed text (the record without `hash`
 * and `mac`) is the line with `"hash":"…","mac":"…",` left out. `mac` is the HMAC-SHA256 of
 * `hash` under the user's journal key (see key.ts); a line without it is from an older format or
 * another tool and is read, but never trusted. Only `data` needs the general canonicalizer; the other
 * fields have fixed, escape-free shapes (checked on load) and are spelled out here, which keeps
 * both the append path and the load path to one canonicalization per record.
 */

const HEX64 = /^[0-9a-f]{64}$/;
/** Exactly what Date.prototype.toISOString produces for years 0000-9999. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RECORD_KEY_COUNT = 6;
const AUTHENTICATED_KEY_COUNT = 7;

const DATA_OPEN = '{"data":';
const HASH_OPEN = ',"hash":"';

/** The canonical text of the mac field, between hash and prev; empty for a record without one. */
function macPart(mac: string | undefined): string {
  return mac === undefined ? "" : `,"mac":"${mac}"`;
}

/** Everything after `data` in the canonical text, the hash field excluded. */
function envelopeTail(prev: string, seq: number, time: string, type: string): string {
  return `,"prev":"${prev}","seq":${seq},"time":"${time}","type":${JSON.stringify(type)}}`;
}

/**
 * Whether `line` is exactly DATA_OPEN + dataText + HASH_OPEN + hash + '"' + tail. Built and
 * compared whole: V8 compares two flat strings with one memory comparison, while comparing
 * pieces in place (startsWith at an offset) goes character by character and measured slower.
 */
function isCanonicalLine(line: string, dataText: string, hash: string, mac: string, tail: string): boolean {
  return (
    line.length ===
      DATA_OPEN.length + dataText.length + HASH_OPEN.length + hash.length + 1 + mac.length + tail.length &&
    line === `${DATA_OPEN}${dataText}${HASH_OPEN}${hash}"${mac}${tail}`
  );
}

function firstIssue(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
  return `${where}: ${issue.message}`;
}

/**
 * Each event type's data check, generated from its schema once the type has been appended or
 * loaded a few times (compiled-check.ts: zod's own calls are the slowest part of an append in a
 * running session; a short run is cheaper without generating). A pass is final; a fail is judged
 * and explained by zod.
 */
const checks = new Map<EventType, CompiledCheck>();

function dataProblem(type: EventType, data: unknown): string | undefined {
  let check = checks.get(type);
  if (check === undefined) {
    check = deferredCheck(EVENT_SCHEMAS[type]);
    checks.set(type, check);
  }
  if (check(data)) return undefined;
  const parsed = EVENT_SCHEMAS[type].safeParse(data, { jitless: true });
  return parsed.success ? undefined : firstIssue(parsed.error);
}

/** Why a new event cannot be journaled, or undefined when it can. */
function newEventProblem(event: AnyNewEvent): string | undefined {
  if (typeof event.type !== "string" || !isEventType(event.type)) {
    return `unknown event type ${JSON.stringify(String(event.type))}`;
  }
  const problem = dataProblem(event.type, event.data);
  return problem === undefined ? undefined : `${event.type} data does not match its schema: ${problem}`;
}

export interface EncodedRecord {
  record: AnyRecord;
  /** The canonical line including its trailing "\n". */
  line: string;
}

/**
 * Build the record that follows `prev` at position `seq`, authenticated with `key`. Throws JournalError("INVALID_EVENT")
 * for an unknown type, data that fails its schema, or data with no canonical JSON form (a lone
 * surrogate), so that a programming error never reaches the file.
 */
export function encodeRecord(
  event: AnyNewEvent,
  seq: number,
  prev: string,
  at: Date,
  key: JournalKey,
): EncodedRecord {
  const problem = newEventProblem(event);
  if (problem) throw new JournalError("INVALID_EVENT", `cannot journal event: ${problem}`);
  if (Number.isNaN(at.getTime()))
    throw new JournalError("INVALID_EVENT", "the journal clock returned an invalid date");
  const time = at.toISOString();
  if (!ISO_TIME.test(time)) throw new JournalError("INVALID_EVENT", `journal time ${time} is out of range`);
  let form: CanonicalForm;
  try {
    form = canonicalForm(event.data);
  } catch (error) {
    const reason = error instanceof Error ? error.message : "no canonical form";
    throw new JournalError("INVALID_EVENT", `cannot journal ${event.type} event: ${reason}`);
  }
  const dataText = form.text;
  const tail = envelopeTail(prev, seq, time, event.type);
  const hash = sha256Hex(DATA_OPEN + dataText + tail);
  const mac = key.sign(hash);
  // The returned data is a fresh copy equal to a parse of what was written, so it equals what a
  // later load returns (undefined-valued keys dropped) and the caller's object can change
  // without effect.
  const record = { seq, type: event.type, time, data: form.value, prev, hash, mac } as AnyRecord;
  return { record, line: `${DATA_OPEN}${dataText}${HASH_OPEN}${hash}"${macPart(mac)}${tail}\n` };
}

export type RecordFaultCode = "CORRUPT" | "TAMPERED";

export interface RecordFault {
  fault: RecordFaultCode;
  message: string;
}

export function isRecordFault(value: AnyRecord | RecordFault): value is RecordFault {
  return "fault" in value;
}

function corrupt(message: string): RecordFault {
  return { fault: "CORRUPT", message };
}

/**
 * True when the object keys at every level are in RFC 8785 order (UTF-16 code units). For a value
 * from JSON.parse this means JSON.stringify already produced the canonical text.
 */
function keysSorted(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (!keysSorted(item)) return false;
    return true;
  }
  let previous: string | undefined;
  for (const key in value) {
    if (previous !== undefined && previous >= key) return false;
    previous = key;
    if (!keysSorted((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/**
 * The canonical text of record data read from a line. JSON.stringify equals RFC 8785 for values
 * from JSON.parse whose keys are already sorted and whose strings hold no lone surrogate (those
 * would appear as a \ud escape); that cheap case covers every line this module writes. Anything
 * else goes through canonicalJson, the reference. Throws when the data has no canonical form.
 */
function canonicalDataText(data: unknown): string {
  const text = JSON.stringify(data);
  if (!text.includes("\\ud") && keysSorted(data)) return text;
  return canonicalJson(data);
}

/**
 * Verify one line (without its "\n") as the record expected at `seq` after `prev`: valid JSON
 * object, exact key set, seq, byte-exact canonical form, hash, prev chain, known type, data
 * schema. Returns the parsed record or the first fault found. This is the load hot path: it
 * canonicalizes and hashes once per record and allocates little beyond the parse itself.
 */
export function decodeRecordLine(line: string, seq: number, prev: string): AnyRecord | RecordFault {
  const where = `line ${seq + 1} (expected seq ${seq})`;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return corrupt(`${where} is not valid JSON`);
  }
  if (!isJsonObject(value)) return corrupt(`${where} is not a JSON object`);
  const { seq: foundSeq, type, time, data, prev: foundPrev, hash, mac } = value;
  let keyCount = 0;
  for (const _ in value) keyCount += 1;
  if (
    (keyCount !== RECORD_KEY_COUNT && (keyCount !== AUTHENTICATED_KEY_COUNT || mac === undefined)) ||
    (mac !== undefined && (typeof mac !== "string" || !HEX64.test(mac))) ||
    typeof foundSeq !== "number" ||
    typeof type !== "string" ||
    typeof time !== "string" ||
    !isJsonObject(data) ||
    typeof foundPrev !== "string" ||
    typeof hash !== "string"
  ) {
    return corrupt(`${where} does not have the record fields {seq, type, time, data, prev, hash[, mac]}`);
  }
  if (foundSeq !== seq) {
    return corrupt(`${where} holds seq ${foundSeq}: a record is missing, duplicated or out of order`);
  }
  // A prev equal to the verified previous hash is well-formed by induction, and a hash that
  // matches the recomputed digest below is too, so the pattern only runs when needed.
  if (foundPrev !== prev && !HEX64.test(foundPrev)) {
    return corrupt(`record seq ${seq} has a malformed prev field`);
  }
  if (!ISO_TIME.test(time)) return corrupt(`record seq ${seq} has a malformed time ${JSON.stringify(time)}`);
  let dataText: string;
  try {
    dataText = canonicalDataText(data);
  } catch {
    return { fault: "TAMPERED", message: `record seq ${seq} was modified: its data has no canonical form` };
  }
  const tail = envelopeTail(foundPrev, seq, time, type);
  if (!isCanonicalLine(line, dataText, hash, macPart(mac as string | undefined), tail)) {
    return {
      fault: "TAMPERED",
      message: `record seq ${seq} was modified: its bytes are not the canonical encoding the writer produced`,
    };
  }
  if (sha256Hex(DATA_OPEN + dataText + tail) !== hash) {
    return {
      fault: "TAMPERED",
      message: `record seq ${seq} was modified: its content does not match its hash`,
    };
  }
  if (foundPrev !== prev) {
    return corrupt(
      `record seq ${seq} does not follow the record before it (prev hash mismatch): a record was removed, reordered or replaced`,
    );
  }
  if (!isEventType(type)) {
    return corrupt(`record seq ${seq} has unknown event type ${JSON.stringify(type)}`);
  }
  const problem = dataProblem(type as EventType, data);
  if (problem !== undefined) {
    return corrupt(`record seq ${seq} (${type}) data does not match its schema: ${problem}`);
  }
  return value as unknown as AnyRecord;
}
