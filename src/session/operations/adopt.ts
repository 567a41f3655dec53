import { SessionState } from "../../engine/state.js";
import type { JournalStore } from "../../journal/store.js";
import type { JournalTrust } from "../../journal/trust.js";
import type { JsonObject, JsonValue } from "../../shared/json.js";
import { UsageError } from "../usage-error.js";
import { SessionOperationError } from "./error.js";

/** What resuming an adopted session would do with the user's machine and credentials. */
export interface AdoptionFacts {
  goal: string;
  acceptance: string[];
  /** As recorded: a well-formed journal has strings here, an adopted one may have anything. */
  provider: JsonValue | null;
  model: JsonValue | null;
  base_url: JsonValue | null;
  api_key_env: JsonValue | null;
  policy_flags: JsonObject;
  recorded_key_id: string | null;
}

/** The journal a person is asked to adopt, as they are shown it. */
export interface AdoptionReview {
  trust: JournalTrust;
  /** The chain head the person vouches for by adopting: the adoption is refused if it moved. */
  head: { hash: string; records: number } | undefined;
  state: SessionState;
  /** undefined: no session.started record (resuming would run nothing recorded). */
  facts: AdoptionFacts | undefined;
}

/** Read a journal to show before adopting it (no lock: a person may take their time to answer). */
export async function reviewAdoption(store: JournalStore, sessionId: string): Promise<AdoptionReview> {
  const { records, trust } = await store.readReport(sessionId);
  const state = SessionState.from(records);
  const last = records[records.length - 1];
  return {
    trust,
    head: last ? { hash: last.hash, records: records.length } : undefined,
    state,
    facts: adoptionFacts(state),
  };
}

function adoptionFacts(state: SessionState): AdoptionFacts | undefined {
  const header = state.header;
  if (!header) return undefined;
  // The model the session would talk to now: its start's, or the latest model.switched's.
  const options = state.options ?? {};
  const provider = state.provider ?? header.provider;
  return {
    goal: header.goal,
    acceptance: header.acceptance ?? [],
    provider: provider.kind ?? null,
    model: provider.model ?? options.model ?? null,
    base_url: provider.base_url ?? options.baseUrl ?? null,
    api_key_env: options.apiKeyEnv ?? null,
    policy_flags: options,
    recorded_key_id: header.key_id ?? null,
  };
}

export interface AdoptionReport {
  headHash: string;
  records: number;
}

/**
 * Adopt the journal a person reviewed (harness journal adopt): append journal.adopted, under the
 * writer lock, vouching for the head they were shown. The records read under the lock must end at
 * that head: a chain is identified by its head hash, so then they are exactly the records (and the
 * trust) the person judged. A journal that gained records since (another writer, another adoption)
 * is refused with JOURNAL_CHANGED and nothing is appended.
 */
export async function adoptSession(
  store: JournalStore,
  sessionId: string,
  reviewed: AdoptionReview,
  by: string,
): Promise<AdoptionReport> {
  if (reviewed.trust.trusted)
    throw new UsageError(`session ${sessionId} is already trusted; nothing to adopt`);
  if (!reviewed.head) throw new UsageError(`session ${sessionId} has no records to adopt`);
  const writer = await store.openWriter(sessionId, { create: false, adopt: true });
  try {
    const head = writer.last;
    if (head?.hash !== reviewed.head.hash || writer.length !== reviewed.head.records) {
      throw new SessionOperationError(
        "JOURNAL_CHANGED",
        `session ${sessionId} changed while you were reviewing it (${reviewed.head.records} records shown, ` +
          `${writer.length} now); nothing was adopted: run harness journal adopt ${sessionId} again to review it as it is`,
      );
    }
    await writer.append([
      {
        type: "journal.adopted",
        data: {
          head_hash: head.hash,
          records: writer.length,
          key_id: writer.keyId,
          previous_key_id: reviewed.trust.recordedKeyId,
          reason: reviewed.trust.problem,
          by,
        },
      },
    ]);
    return { headHash: head.hash, records: reviewed.head.records };
  } finally {
    await writer.close();
  }
}
