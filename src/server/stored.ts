import { ErrorCode, RpcError } from "../api/errors.js";
import type { SessionSummary } from "../api/methods.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import { canSee, type Identity } from "./identities.js";
import { NotificationFold } from "./notifications.js";
import type { SessionFactory, SessionStore } from "./ports.js";

/** The owner a session's journal names (sessions recorded outside the server: the local user). */
export function ownerOf(records: readonly AnyRecord[]): string {
  const first = records[0];
  if (first?.type !== "session.started") return "local";
  const identity = first.data.options?.identity;
  return typeof identity === "string" ? identity : "local";
}

export function notFound(session: string): RpcError {
  return new RpcError(ErrorCode.NotFound, `no session ${session}`, { code: "SESSION_NOT_FOUND" });
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Sessions at rest: journals in a workspace (or the database) that this server may not be
 * hosting. Every read verifies the journal; a session an identity may not see is "not found".
 */
export class StoredSessions {
  /** Stores sessions were found in, by workspace path: a later session/read looks there too. */
  readonly #stores = new Map<string, SessionStore>();
  /** The last summary of each listed journal, with the stamp it was made at. */
  readonly #summaries = new Map<string, { stamp: string; summary: SessionSummary }>();

  constructor(private readonly factory: SessionFactory) {}

  /** A workspace's store, or (undefined) the server's default; undefined when there is none. */
  async store(workspace: string | undefined): Promise<SessionStore | undefined> {
    let store: SessionStore | undefined;
    try {
      store = await this.factory.store(workspace);
    } catch (error) {
      throw new RpcError(ErrorCode.InvalidParams, messageOf(error));
    }
    if (store?.workspace !== undefined) this.#stores.set(store.workspace, store);
    return store;
  }

  /**
   * Every store sessions are listed from when no workspace is named: the served ones (each
   * --workspace or the current directory, the database) and every workspace a session was opened
   * in, each once. (What an identity sees in them is decided per session by its owner.)
   */
  async listed(): Promise<SessionStore[]> {
    const fallback = await this.store(undefined);
    let served: SessionStore[];
    try {
      served = [...(fallback ? [fallback] : []), ...(await this.factory.served())];
    } catch (error) {
      throw new RpcError(ErrorCode.InvalidParams, messageOf(error));
    }
    const out: SessionStore[] = [];
    const seen = new Set<string>();
    for (const store of [...served, ...this.#stores.values()]) {
      const key = store.workspace ?? "";
      if (seen.has(key)) continue;
      seen.add(key);
      if (store.workspace !== undefined) this.#stores.set(store.workspace, store);
      out.push(store);
    }
    return out;
  }

  /** The summaries of a store's sessions this identity may see, except those in `skip`. */
  async summaries(
    identity: Identity,
    store: SessionStore,
    skip: ReadonlySet<string>,
  ): Promise<SessionSummary[]> {
    const out: SessionSummary[] = [];
    const workspace = store.workspace ?? "";
    for (const id of await store.store.list()) {
      if (skip.has(id)) continue;
      // A journal unchanged since it was last summarized is not read again (the page lists every few seconds).
      const key = `${workspace}\0${id}`;
      const stamp = await store.stamp?.(id).catch(() => undefined);
      const cached = stamp === undefined ? undefined : this.#summaries.get(key);
      if (cached !== undefined && cached.stamp === stamp) {
        if (canSee(identity, cached.summary.identity)) out.push(cached.summary);
        continue;
      }
      let records: readonly AnyRecord[];
      try {
        records = (await store.store.readReport(id)).records;
      } catch {
        if (identity.policy.see_all)
          out.push({ session: id, workspace, identity: "unknown", status: "unknown", last_seq: 0 });
        continue;
      }
      const owner = ownerOf(records);
      if (!canSee(identity, owner)) continue;
      const fold = new NotificationFold(id);
      for (const record of records) fold.next(record);
      const header = records[0]?.type === "session.started" ? records[0] : undefined;
      const elsewhere = fold.ended === undefined && (await store.lockHolder?.(id)) !== undefined;
      const summary: SessionSummary = {
        session: id,
        workspace,
        identity: owner,
        status: fold.ended ?? (elsewhere ? "running" : records.length > 0 ? "idle" : "unknown"),
        ...(header?.type === "session.started" ? { goal: header.data.goal, started_at: header.time } : {}),
        last_seq: Math.max(fold.lastSeq, 0),
        ...(fold.outcome !== undefined ? { outcome: fold.outcome } : {}),
        ...(elsewhere ? { running_elsewhere: true } : {}),
      };
      // One another process runs is read again each time: its lock can go stale without a write.
      if (stamp !== undefined && !elsewhere) this.#summaries.set(key, { stamp, summary });
      else this.#summaries.delete(key);
      out.push(summary);
    }
    return out;
  }

  /**
   * A session's records and store, if this identity may see it. `hostedIn`: the workspace of a
   * session this server hosts (it may have no journal yet); otherwise the default store and every
   * store seen so far are searched.
   */
  async find(
    identity: Identity,
    session: string,
    hostedIn: string | undefined,
  ): Promise<{ records: AnyRecord[]; store: SessionStore }> {
    const candidates: SessionStore[] = [];
    if (hostedIn !== undefined) {
      const store = await this.store(hostedIn);
      // Hosted before its first record (started without a goal): nothing to read yet.
      if (store && !(await store.store.exists(session))) return { records: [], store };
      if (store) candidates.push(store);
    } else {
      candidates.push(...(await this.listed()));
    }
    for (const store of candidates) {
      if (!(await store.store.exists(session).catch(() => false))) continue;
      let records: AnyRecord[];
      try {
        records = await store.store.read(session);
      } catch (error) {
        if (!identity.policy.see_all) throw notFound(session);
        throw new RpcError(ErrorCode.InternalError, `cannot read session ${session}: ${messageOf(error)}`);
      }
      if (!canSee(identity, ownerOf(records))) throw notFound(session);
      return { records, store };
    }
    throw notFound(session);
  }
}
