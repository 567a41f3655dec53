import { ErrorCode, RpcError } from "../api/errors.js";
import type { ParsedParamsOf as ParamsOf, RunOptions, SessionSummary } from "../api/methods.js";
import type { EngineListener } from "../engine/options.js";
import { hostManySessions } from "../journal/fsync-threads.js";
import { SESSION_ID_PATTERN } from "../journal/session-path.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import { type LiveExport, liveExport, withLiveExport } from "../otel/enabled.js";
import { harnessVersion } from "../session/version.js";
import type { JsonObject } from "../shared/json.js";
import { admitStart, admitWorkspace } from "./admission.js";
import { agentReplay } from "./agent-replay.js";
import { type PendingApproval, WireApprover, type WireDecision } from "./approvals.js";
import { canSee, type Identity } from "./identities.js";
import {
  type Notification,
  NotificationFold,
  replay,
  replayed,
  type SessionStatus,
} from "./notifications.js";
import type { OpenedSession, SessionFactory, SessionRun, SessionStore } from "./ports.js";
import { messageOf, notFound, ownerOf, StoredSessions } from "./stored.js";
import { StoredFollower } from "./stored-follower.js";

/** Where a subscriber's notifications go; `durable` ones carry seq and hash and can be replayed. */
export type Sink = (notification: Notification, durable: boolean) => void;

/** One session this server hosts: its journal's fold, its approver and the turn running now. */
interface Hosted {
  id: string;
  owner: string;
  /** The opened session without the records it was opened with: those are folded once, then left on disk. */
  opened: Omit<OpenedSession, "records">;
  fold: NotificationFold;
  approver: WireApprover;
  run: SessionRun | undefined;
  done: Promise<void> | undefined;
  status: SessionStatus;
  goal: string | undefined;
  startedAt: string | undefined;
  /** Why the last run failed before finishing (a refused journal, a bad setup). */
  failure: string | undefined;
  /** OpenTelemetry export of the session's records, when an endpoint is configured. */
  live?: LiveExport | undefined;
}

export interface HubOptions {
  factory: SessionFactory;
  log: (line: string) => void;
}

/**
 * Many sessions at once. Each hosted session has its own workspace and journal (an engine per
 * turn takes its writer lock), its own approver, and subscribers that get every durable record
 * as one notification. A subscriber leaving never stops a session.
 */
export class SessionHub {
  readonly #sessions = new Map<string, Hosted>();
  readonly #sinks = new Map<string, Set<Sink>>();
  /** Sessions not hosted here that someone follows: polled for what another process appends. */
  readonly #followers = new Map<string, StoredFollower>();
  #closing = false;

  readonly #stored: StoredSessions;

  constructor(private readonly options: HubOptions) {
    this.#stored = new StoredSessions(options.factory);
    // Many sessions' appends at once: more fsyncs on the disk together than libuv's pool allows.
    hostManySessions();
  }

  /** Host a session (new or at rest); `sink` follows it from before its next record. */
  async start(
    identity: Identity,
    params: ParamsOf<"session/start">,
    sink?: Sink,
  ): Promise<{ session: string; status: SessionStatus; unsubscribe?: () => void }> {
    if (this.#closing) throw new RpcError(ErrorCode.Conflict, "the server is shutting down");
    if (params.session !== undefined && this.#sessions.has(params.session)) {
      const hosted = this.#visible(identity, params.session);
      throw new RpcError(ErrorCode.Conflict, `session ${hosted.id} is already being served`, {
        code: "SESSION_BUSY",
      });
    }
    if (params.session !== undefined) checkSessionId(params.session);
    const admitted = await admitStart(identity, params);
    if (params.session !== undefined)
      await this.#refuseIfRunningElsewhere(params.session, await this.#stored.store(admitted.workspace));
    const options: RunOptions = params.options ?? {};
    let approver: WireApprover | undefined;
    let fold: NotificationFold | undefined;
    let hostedRef: Hosted | undefined;
    const opened = await this.options.factory.open({
      workspace: admitted.workspace,
      ...(admitted.script !== undefined
        ? { script: { path: admitted.script, code: admitted.scriptIsCode } }
        : {}),
      ...(params.session !== undefined ? { sessionId: params.session } : {}),
      options,
      identity,
      approver: (sessionId) => {
        fold = new NotificationFold(sessionId);
        const f = fold;
        approver = new WireApprover(
          sessionId,
          (callId) => f.approvalOf(callId),
          () => hostedRef && this.#statusChanged(hostedRef),
          options.approval_timeout_ms,
        );
        return approver;
      },
    });
    if (!approver || !fold)
      throw new RpcError(ErrorCode.InternalError, "the session was opened without its approver");
    const owner = opened.records.length > 0 ? ownerOf(opened.records) : identity.name;
    if (!canSee(identity, owner)) {
      await opened.close();
      throw notFound(opened.sessionId);
    }
    if (this.#sessions.has(opened.sessionId)) {
      await opened.close();
      throw new RpcError(ErrorCode.Conflict, `session ${opened.sessionId} is already being served`, {
        code: "SESSION_BUSY",
      });
    }
    // Someone was following it from its journal: what was appended since their last poll goes to them now.
    const follower = this.#followers.get(opened.sessionId);
    follower?.stop();
    this.#followers.delete(opened.sessionId);
    const followedTo = follower?.lastSeq ?? Number.POSITIVE_INFINITY;
    for (const record of opened.records) {
      const notification = fold.next(record);
      if (record.seq > followedTo) this.#emit(opened.sessionId, notification, true);
    }
    const header = opened.records[0]?.type === "session.started" ? opened.records[0] : undefined;
    // Kept for as long as the session is served: a copy without the records it was opened with
    // (a resumed session's whole journal), so what the server holds does not grow with them.
    const { records: _folded, ...served } = opened;
    const hosted: Hosted = {
      id: opened.sessionId,
      owner,
      opened: served,
      fold,
      approver,
      run: undefined,
      done: undefined,
      status: fold.ended ?? "idle",
      goal: header?.type === "session.started" ? header.data.goal : undefined,
      startedAt: header?.time,
      failure: undefined,
      // OpenTelemetry, only when an endpoint is configured (the SDK is not even loaded otherwise).
      live: await liveExport(opened.sessionId, harnessVersion()),
    };
    hostedRef = hosted;
    this.#sessions.set(hosted.id, hosted);
    // Hosted on a thread that stopped: no longer served here (a later session/start opens it again).
    void opened.lost?.then((why) => this.#lost(hosted, why));
    // Its workspace is served from now on: session/list shows the other sessions recorded there.
    await this.#stored.store(hosted.opened.workspace).catch(() => undefined);
    const unsubscribe = sink ? this.#follow(hosted.id, sink) : undefined;
    if (params.goal !== undefined) {
      try {
        this.#startRun(hosted, params.goal);
        await hosted.run?.started;
      } catch (error) {
        // Refused before it began (a command template not loaded): nothing was recorded, so the
        // session is not kept open.
        this.#sessions.delete(hosted.id);
        unsubscribe?.();
        await opened.close().catch(() => undefined);
        throw error;
      }
    }
    return { session: hosted.id, status: hosted.status, ...(unsubscribe ? { unsubscribe } : {}) };
  }

  async list(identity: Identity, params: ParamsOf<"session/list">) {
    const sessions: SessionSummary[] = [];
    const seen = new Set<string>();
    const workspace =
      params.workspace === undefined ? undefined : await admitWorkspace(identity, params.workspace);
    const named = workspace === undefined ? undefined : await this.#stored.store(workspace);
    // Without a workspace named: every served workspace (sessions any door recorded there) and the database.
    const stores = workspace === undefined ? await this.#stored.listed() : named ? [named] : [];
    for (const hosted of this.#sessions.values()) {
      if (!canSee(identity, hosted.owner)) continue;
      if (params.workspace !== undefined && named?.workspace !== hosted.opened.workspace) continue;
      seen.add(hosted.id);
      sessions.push({
        session: hosted.id,
        workspace: hosted.opened.workspace,
        identity: hosted.owner,
        status: hosted.status,
        ...(hosted.goal !== undefined ? { goal: hosted.goal } : {}),
        last_seq: Math.max(hosted.fold.lastSeq, 0),
        ...(hosted.startedAt !== undefined ? { started_at: hosted.startedAt } : {}),
        ...(hosted.fold.outcome !== undefined && !hosted.run ? { outcome: hosted.fold.outcome } : {}),
      });
    }
    for (const store of stores) {
      const found = await this.#stored.summaries(identity, store, seen);
      for (const summary of found) seen.add(summary.session);
      sessions.push(...found);
    }
    const workspaces = stores.flatMap((store) => (store.workspace === undefined ? [] : [store.workspace]));
    return { sessions, ...(workspaces.length > 0 ? { workspaces } : {}) };
  }

  async read(identity: Identity, params: ParamsOf<"session/read">) {
    const { records } = await this.#records(identity, params.session);
    // Journal seqs start at 0 (session.started): by default the whole journal.
    const from = params.from_seq ?? 0;
    let selected = records.filter((record) => record.seq >= from);
    if (params.limit !== undefined) selected = selected.slice(0, params.limit);
    const last = records.at(-1);
    return {
      session: params.session,
      records: selected,
      head: last ? { seq: last.seq, hash: last.hash } : null,
    };
  }

  async verify(identity: Identity, params: ParamsOf<"session/verify">) {
    const { store } = await this.#records(identity, params.session);
    const result = await store.verify(params.session);
    return {
      session: params.session,
      ok: result.ok,
      records: result.records,
      head_hash: result.head,
      problems: result.problems,
    };
  }

  /**
   * Replay the session's durable notifications from `fromSeq` (none when undefined), then its
   * live ones: live records arriving during the replay are held and sent after it, each once.
   */
  async subscribe(
    identity: Identity,
    session: string,
    fromSeq: number | undefined,
    sink: Sink,
  ): Promise<() => void> {
    const visible = await this.#records(identity, session);
    let held: { notification: Notification; durable: boolean }[] | undefined = [];
    const gate: Sink = (notification, durable) => {
      if (held) held.push({ notification, durable });
      else sink(notification, durable);
    };
    const unsubscribe = this.#follow(session, gate);
    let sentUpTo = -1;
    try {
      if (fromSeq !== undefined) {
        // Read again after registering: nothing journaled in between is missed.
        const records = this.#sessions.has(session)
          ? (await this.#records(identity, session)).records
          : visible.records;
        for (const notification of replay(session, records, fromSeq)) {
          sink(notification, true);
          sentUpTo = notification.params.seq as number;
        }
        sentUpTo = Math.max(sentUpTo, records.at(-1)?.seq ?? -1);
        // Then its sub-agents' records so far, as live ones would have come (held ones follow).
        for (const notification of await agentReplay(visible.store.store, session)) sink(notification, false);
      } else {
        sentUpTo = this.#sessions.get(session)?.fold.lastSeq ?? visible.records.at(-1)?.seq ?? -1;
      }
    } finally {
      const pending = held;
      held = undefined;
      for (const item of pending) {
        if (item.durable && (item.notification.params.seq as number) <= sentUpTo) continue;
        sink(item.notification, item.durable);
      }
    }
    await this.#followStored(session, visible.store, visible.records);
    return unsubscribe;
  }

  /**
   * A follower that takes the replay at its own pace (the HTTP event stream): the session's
   * durable notifications from `fromSeq` as an iterator, and from now on its live ones into
   * `live`, except durable ones the replay holds. The caller sends the replay first.
   */
  async stream(
    identity: Identity,
    session: string,
    fromSeq: number,
    live: Sink,
  ): Promise<{ replay: Iterator<Notification>; unsubscribe: () => void }> {
    const visible = await this.#records(identity, session);
    // Until the replay's end is known, a live notification may be one it holds: kept to decide.
    let replayEnd: number | undefined;
    let early: { notification: Notification; durable: boolean }[] = [];
    const gate: Sink = (notification, durable) => {
      if (replayEnd === undefined) early.push({ notification, durable });
      else if (!durable || (notification.params.seq as number) > replayEnd) live(notification, durable);
    };
    const unsubscribe = this.#follow(session, gate);
    let records: readonly AnyRecord[];
    try {
      // Read again after registering: nothing journaled in between is missed.
      records = this.#sessions.has(session)
        ? (await this.#records(identity, session)).records
        : visible.records;
    } catch (error) {
      unsubscribe();
      throw error;
    }
    // Its sub-agents' records so far end the replay, so they come before any live one (held
    // meanwhile): a child's timeline is rebuilt in order, its live records after (agent-replay.ts).
    const children = await agentReplay(visible.store.store, session);
    replayEnd = records.at(-1)?.seq ?? -1;
    const pending = early;
    early = [];
    for (const item of pending) gate(item.notification, item.durable);
    await this.#followStored(session, visible.store, records);
    return { replay: chained(replayed(session, records, fromSeq), children), unsubscribe };
  }

  #follow(session: string, sink: Sink): () => void {
    const sinks = this.#sinks.get(session) ?? new Set<Sink>();
    this.#sinks.set(session, sinks);
    sinks.add(sink);
    return () => {
      sinks.delete(sink);
      if (sinks.size > 0) return;
      this.#sinks.delete(session);
      this.#followers.get(session)?.stop();
      this.#followers.delete(session);
    };
  }

  /**
   * A session not hosted here is followed from its journal while someone subscribes: another
   * process may be appending to it (started once per session, however many follow it).
   */
  async #followStored(session: string, store: SessionStore, records: readonly AnyRecord[]): Promise<void> {
    if (this.#sessions.has(session) || this.#followers.has(session) || !this.#sinks.has(session)) return;
    const follower = new StoredFollower(
      session,
      store,
      records,
      (notification, durable) => this.#emit(session, notification, durable),
      this.options.log,
    );
    this.#followers.set(session, follower);
    await follower.start();
  }

  /** A session another process holds the writer lock of is not continued here (two writers would collide). */
  async #refuseIfRunningElsewhere(session: string, store: SessionStore | undefined): Promise<void> {
    const holder = await store?.lockHolder?.(session);
    if (holder === undefined) return;
    throw new RpcError(
      ErrorCode.Conflict,
      `session ${session} is being run by another process (${holder}): wait until it ends, then continue it here`,
      { code: "SESSION_LOCKED" },
    );
  }

  async startTurn(
    identity: Identity,
    params: ParamsOf<"turn/start">,
  ): Promise<{ session: string; turn: number }> {
    const hosted = await this.#hosted(identity, params.session);
    if (hosted.run)
      throw new RpcError(ErrorCode.Conflict, "a turn is already running in this session", {
        code: "TURN_RUNNING",
      });
    if (this.#closing) throw new RpcError(ErrorCode.Conflict, "the server is shutting down");
    await this.#refuseIfRunningElsewhere(hosted.id, await this.#stored.store(hosted.opened.workspace));
    if (hosted.run)
      throw new RpcError(ErrorCode.Conflict, "a turn is already running in this session", {
        code: "TURN_RUNNING",
      });
    this.#startRun(hosted, params.input);
    return { session: hosted.id, turn: hosted.fold.turn + 1 };
  }

  async steer(identity: Identity, params: ParamsOf<"turn/steer">): Promise<Record<string, never>> {
    const hosted = await this.#hosted(identity, params.session);
    if (!hosted.run)
      throw new RpcError(ErrorCode.Conflict, "no turn is running: send the text with turn/start");
    try {
      await hosted.run.steer(params.input);
    } catch (error) {
      throw new RpcError(ErrorCode.Conflict, `cannot steer now: ${messageOf(error)}`);
    }
    return {};
  }

  async interrupt(identity: Identity, params: ParamsOf<"turn/interrupt">): Promise<Record<string, never>> {
    const hosted = await this.#hosted(identity, params.session);
    hosted.run?.interrupt();
    return {};
  }

  approvals(identity: Identity, session: string | undefined): { approvals: PendingApproval[] } {
    const approvals: PendingApproval[] = [];
    for (const hosted of this.#sessions.values()) {
      if (!canSee(identity, hosted.owner)) continue;
      if (session !== undefined && hosted.id !== session) continue;
      approvals.push(...hosted.approver.pending);
    }
    return { approvals };
  }

  respond(identity: Identity, approvalId: string, decision: WireDecision): Record<string, never> {
    const cut = approvalId.lastIndexOf(":");
    const hosted = cut > 0 ? this.#sessions.get(approvalId.slice(0, cut)) : undefined;
    if (!hosted || !canSee(identity, hosted.owner))
      throw new RpcError(ErrorCode.NotFound, `no approval ${approvalId}`, { code: "APPROVAL_NOT_FOUND" });
    if (hosted.approver.has(approvalId)) {
      hosted.approver.respond(approvalId, decision, identity.name);
      return {};
    }
    if (hosted.fold.decided(approvalId))
      throw new RpcError(ErrorCode.Conflict, `approval ${approvalId} was already answered`, {
        code: "APPROVAL_ANSWERED",
      });
    throw new RpcError(ErrorCode.NotFound, `no approval ${approvalId}`, { code: "APPROVAL_NOT_FOUND" });
  }

  async fork(identity: Identity, params: ParamsOf<"session/fork">): Promise<{ session: string }> {
    const { store } = await this.#records(identity, params.session);
    try {
      return { session: await store.fork(params.session, params.at_seq) };
    } catch (error) {
      throw new RpcError(ErrorCode.InvalidParams, `cannot fork: ${messageOf(error)}`);
    }
  }

  async compact(identity: Identity, params: ParamsOf<"session/compact">): Promise<{ summary: string }> {
    const hosted = await this.#hosted(identity, params.session);
    if (hosted.run)
      throw new RpcError(ErrorCode.Conflict, "a turn is running: compact after it ends", {
        code: "SESSION_BUSY",
      });
    let summary: string | undefined;
    const listener = this.#listener(hosted, (record) => {
      if (record.type === "context.compacted") summary = record.data.summary;
    });
    const run = hosted.opened.compact(params.instructions, listener);
    hosted.run = run;
    this.#statusChanged(hosted);
    try {
      await run.run();
    } catch (error) {
      throw new RpcError(ErrorCode.Conflict, `cannot compact: ${messageOf(error)}`);
    } finally {
      hosted.run = undefined;
      this.#statusChanged(hosted);
    }
    return { summary: summary ?? "" };
  }

  /** Interrupt every running turn, wait for each to reach its safe point, and close the sessions. */
  async shutdown(): Promise<void> {
    this.#closing = true;
    for (const follower of this.#followers.values()) follower.stop();
    this.#followers.clear();
    const running = [...this.#sessions.values()];
    for (const hosted of running) hosted.run?.interrupt();
    await Promise.all(running.map((hosted) => hosted.done));
    await Promise.all(running.map((hosted) => hosted.opened.close().catch(() => undefined)));
    await Promise.all(
      [...this.#sessions.values()].map((hosted) => hosted.live?.shutdown().catch(() => undefined)),
    );
  }

  /** Sessions running a turn now (for the server's own logs and tests). */
  get running(): number {
    let count = 0;
    for (const hosted of this.#sessions.values()) if (hosted.run) count += 1;
    return count;
  }

  #startRun(hosted: Hosted, input: string): void {
    hosted.failure = undefined;
    const run = hosted.opened.turn(input, this.#listener(hosted));
    hosted.run = run;
    this.#statusChanged(hosted);
    hosted.done = run
      .run()
      .then(
        () => undefined,
        (error: unknown) => {
          hosted.failure = messageOf(error);
          this.options.log(`session ${hosted.id}: ${hosted.failure}`);
        },
      )
      .finally(() => {
        hosted.run = undefined;
        this.#statusChanged(hosted);
      });
  }

  #listener(hosted: Hosted, also?: (record: AnyRecord) => void): EngineListener {
    return withLiveExport(this.#wireListener(hosted, also), hosted.live);
  }

  #wireListener(hosted: Hosted, also?: (record: AnyRecord) => void): EngineListener {
    return {
      record: (record) => {
        if (record.seq <= hosted.fold.lastSeq) return;
        if (record.type === "session.started") {
          hosted.goal = record.data.goal;
          hosted.startedAt = record.time;
        }
        also?.(record);
        const notification = hosted.fold.next(record);
        this.#emit(hosted.id, notification, true);
      },
      // A sub-agent's records, as its journal takes them: live only (they are not this session's).
      agentRecord: (path, record) =>
        this.#emit(
          hosted.id,
          {
            method: "agent/record",
            params: { session: hosted.id, agent: path, record: record as unknown as JsonObject },
          },
          false,
        ),
      stream: (event) => {
        if (event.type !== "text_delta" && event.type !== "reasoning_delta") return;
        this.#emit(
          hosted.id,
          {
            method: "item/delta",
            params: {
              session: hosted.id,
              item_id: `model:${hosted.fold.modelSeq}`,
              kind: event.type === "text_delta" ? "text" : "reasoning",
              text: event.text,
            },
          },
          false,
        );
      },
    };
  }

  #lost(hosted: Hosted, why: string): void {
    if (this.#sessions.get(hosted.id) !== hosted) return;
    this.#sessions.delete(hosted.id);
    hosted.failure = `the session's thread stopped: ${why}`;
    this.#emit(
      hosted.id,
      { method: "session/status", params: { session: hosted.id, status: "idle", error: hosted.failure } },
      false,
    );
  }

  #statusChanged(hosted: Hosted): void {
    const status: SessionStatus = hosted.run
      ? hosted.approver.pending.length > 0
        ? "awaiting_approval"
        : "running"
      : (hosted.fold.ended ?? "idle");
    if (status === hosted.status) return;
    hosted.status = status;
    this.#emit(
      hosted.id,
      {
        method: "session/status",
        params: { session: hosted.id, status, ...(hosted.failure ? { error: hosted.failure } : {}) },
      },
      false,
    );
  }

  #emit(session: string, notification: Notification, durable: boolean): void {
    for (const sink of this.#sinks.get(session) ?? []) {
      try {
        sink(notification, durable);
      } catch (error) {
        this.options.log(`a subscriber of ${session} failed: ${messageOf(error)}`);
      }
    }
  }

  /**
   * A session this server hosts, for a method that needs its engine (turn/start, turn/steer,
   * turn/interrupt, session/compact). One that is only recorded is not opened here: opening takes
   * what session/start is given (the options a journal does not keep, e.g. a scripted model's
   * file) and checks (identity, workspace roots, a trusted journal), so the error names that
   * call with the session's workspace.
   */
  async #hosted(identity: Identity, session: string): Promise<Hosted> {
    const hosted = this.#sessions.get(session);
    if (hosted && canSee(identity, hosted.owner)) return hosted;
    if (hosted) throw notHostedNotFound(session);
    let found: { store: { workspace?: string | undefined } } | undefined;
    try {
      found = await this.#stored.find(identity, session, undefined);
    } catch (error) {
      // Not found, not visible or not readable by this identity: the same answer, nothing leaks.
      if (error instanceof RpcError && error.code === ErrorCode.NotFound) throw notHostedNotFound(session);
      throw error;
    }
    const workspace = found.store.workspace;
    if (workspace === undefined) throw notHostedNotFound(session);
    // An identity that could not open it there is told so (it can see the session already).
    await admitWorkspace(identity, workspace);
    const start = { workspace, session };
    throw new RpcError(
      ErrorCode.NotFound,
      `session ${session} is recorded but not open on this server: call session/start ${JSON.stringify(start)} ` +
        "(with the options it needs that its journal does not keep, e.g. options.script for a scripted model), then this method again",
      { code: "SESSION_NOT_OPEN", workspace, session, call: { method: "session/start", params: start } },
    );
  }

  #visible(identity: Identity, session: string): Hosted {
    const hosted = this.#sessions.get(session);
    if (!hosted || !canSee(identity, hosted.owner)) throw notFound(session);
    return hosted;
  }

  /** A session's records and store, if this identity may see it (else not found: existence never leaks). */
  #records(identity: Identity, session: string) {
    checkSessionId(session);
    const hosted = this.#sessions.get(session);
    if (hosted && !canSee(identity, hosted.owner)) throw notFound(session);
    return this.#stored.find(identity, session, hosted?.opened.workspace);
  }
}

/** A session id from a client is a directory name: checked before anything is looked up by it. */
export function checkSessionId(session: string): void {
  if (!SESSION_ID_PATTERN.test(session))
    throw new RpcError(
      ErrorCode.InvalidParams,
      `invalid session id ${JSON.stringify(session.slice(0, 80))}: 1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit`,
      { code: "INVALID_SESSION_ID" },
    );
}

/** A session this identity cannot use here and that is not found where this server looks. */
function notHostedNotFound(session: string): RpcError {
  return new RpcError(
    ErrorCode.NotFound,
    `no session ${session} is open on this server: open a recorded one with session/start {"workspace": DIR, "session": "${session}"}`,
    { code: "SESSION_NOT_FOUND" },
  );
}

/** One iterator after another: the journal's replay pulled at the reader's pace, then the rest. */
function* chained(first: Iterator<Notification>, then: readonly Notification[]): Generator<Notification> {
  for (let step = first.next(); !step.done; step = first.next()) yield step.value;
  yield* then;
}
