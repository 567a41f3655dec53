import type { JournalKey } from "./key.js";
import { JournalError } from "./store.js";
import type { AnyNewEvent, AnyRecord } from "./vocabulary.js";

/**
 * Whether a verified chain was recorded (or explicitly adopted) by the holder of this user's
 * journal key. The chain makes every record commit to all records before it, and a writer never
 * appends to a journal it does not trust, so the last record authenticating under the key vouches
 * for the whole journal: for records this user wrote, and for those a `journal.adopted` record
 * (itself authenticated) took on. Anything else is refused by every command that acts on it.
 */
export type JournalTrust =
  | { trusted: true; keyId: string }
  | {
      trusted: false;
      /** UNAUTHENTICATED: no record carries a tag (an older format or another tool). */
      problem: "UNAUTHENTICATED" | "FOREIGN_KEY" | "FORGED";
      message: string;
      /** The key fingerprint the journal names, when it names one. */
      recordedKeyId: string | null;
    };

export interface JournalReading {
  records: AnyRecord[];
  trust: JournalTrust;
}

/** The command a person runs to trust a journal they did not record (shown in messages). */
export function adoptCommand(sessionId: string): string {
  return `harness journal adopt ${sessionId}`;
}

function verifiedBy(key: JournalKey, record: AnyRecord): boolean {
  return key.verifies(record.hash, record.mac);
}

/** The key id a journal claims: its latest authenticated-looking adoption, else its header. */
function recordedKeyIdOf(records: readonly AnyRecord[]): string | null {
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i];
    if (record?.type === "journal.adopted") return record.data.key_id;
    if (record?.type === "session.started") return record.data.key_id ?? null;
  }
  return null;
}

export function assessTrust(records: readonly AnyRecord[], key: JournalKey, sessionId: string): JournalTrust {
  const last = records[records.length - 1];
  if (!last || verifiedBy(key, last)) return { trusted: true, keyId: key.id };
  const recordedKeyId = recordedKeyIdOf(records);
  const next =
    "Nothing was run. If you know where it came from and accept what it would run (see it first), " +
    `trust it with \`${adoptCommand(sessionId)}\`; otherwise start a new session.`;
  if (records.every((record) => record.mac === undefined)) {
    return {
      trusted: false,
      problem: "UNAUTHENTICATED",
      recordedKeyId,
      message:
        `session ${sessionId} is not authenticated: it was written by an older harness or by another tool, ` +
        `so nothing shows that you recorded it. ${next}`,
    };
  }
  if (recordedKeyId !== null && recordedKeyId !== key.id) {
    return {
      trusted: false,
      problem: "FOREIGN_KEY",
      recordedKeyId,
      message:
        `session ${sessionId} was recorded under another journal key (${recordedKeyId}; yours is ${key.id}): ` +
        `by another user, on another machine, or shipped inside the repository. ${next}`,
    };
  }
  // Scan from the last adoption this key made: records before it were vouched for explicitly.
  let start = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i];
    if (record?.type === "journal.adopted" && verifiedBy(key, record)) {
      start = i;
      break;
    }
  }
  const forged = records.slice(start).find((record) => !verifiedBy(key, record)) ?? last;
  return {
    trusted: false,
    problem: "FORGED",
    recordedKeyId,
    message:
      `session ${sessionId}: record seq ${forged.seq} (${forged.type}) does not authenticate under your journal key: ` +
      `it was changed or added after it was written, and the hash chain recomputed without the key. ${next}`,
  };
}

/** The error a command that acts on a journal raises when it is not trusted. */
export function untrustedError(trust: Extract<JournalTrust, { trusted: false }>): JournalError {
  return new JournalError("UNTRUSTED", trust.message);
}

/**
 * Adoption must start with the record that vouches for the current chain head, so a writer opened
 * to adopt an untrusted journal can append nothing else first.
 */
export function assertAdoptionFirst(
  sessionId: string,
  events: readonly AnyNewEvent[],
  head: AnyRecord | undefined,
): void {
  const first = events[0];
  if (
    first?.type !== "journal.adopted" ||
    first.data.head_hash !== head?.hash ||
    first.data.records !== (head ? head.seq + 1 : 0)
  ) {
    throw new JournalError(
      "UNTRUSTED",
      `session ${sessionId}: a writer opened to adopt an untrusted journal must first append journal.adopted naming its head`,
    );
  }
}
