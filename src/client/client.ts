import {
  type ApprovalDecision,
  type ApprovalRequested,
  ErrorCode,
  isMethodName,
  isNotificationName,
  METHODS,
  type MethodName,
  NOTIFICATIONS,
  type Notification,
  notificationEnvelope,
  type ParamsOf,
  type ResultOf,
  RpcError,
  wireIssues,
} from "../api/index.js";
import { SessionOrder } from "./order.js";
import { AsyncQueue } from "./queue.js";
import { protocolViolation, type Transport } from "./transport.js";

/** The statuses in which a session may ask for approvals. */
const ASKING: ReadonlySet<string> = new Set(["running", "awaiting_approval"]);

export type ApprovalHandler = (approval: ApprovalRequested) => Promise<ApprovalDecision>;

export interface EventsOptions {
  /** Replay from this seq (default 0: the whole session, from session.started), then follow live. */
  fromSeq?: number;
  signal?: AbortSignal;
}

export interface HarnessClient {
  /** Any method, typed from the protocol's schemas; the result is checked before it is returned. */
  request<M extends MethodName>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>>;
  initialize(params?: ParamsOf<"initialize">): Promise<ResultOf<"initialize">>;
  startSession(params: ParamsOf<"session/start">): Promise<ResultOf<"session/start">>;
  startTurn(session: string, input: string): Promise<ResultOf<"turn/start">>;
  steer(session: string, input: string): Promise<void>;
  interrupt(session: string): Promise<void>;
  listApprovals(session?: string): Promise<ApprovalRequested[]>;
  respond(approvalId: string, decision: ApprovalDecision): Promise<void>;
  fork(session: string, atSeq?: number): Promise<ResultOf<"session/fork">>;
  compact(session: string, instructions?: string): Promise<ResultOf<"session/compact">>;
  read(session: string, opts?: { fromSeq?: number; limit?: number }): Promise<ResultOf<"session/read">>;
  verify(session: string): Promise<ResultOf<"session/verify">>;
  list(workspace?: string): Promise<ResultOf<"session/list">["sessions"]>;
  shutdown(): Promise<void>;
  /**
   * The session's notifications in journal order, each durable one exactly once: replayed from
   * `fromSeq`, then live. Over HTTP a dropped stream is resumed with `Last-Event-ID`. Ends when
   * `signal` aborts or the client closes; throws an `RpcError` when the server breaks the protocol.
   */
  events(session: string, opts?: EventsOptions): AsyncIterableIterator<Notification>;
  /**
   * Answers `approval/requested` of every session this client follows, over either transport and
   * whether or not its `events()` are being read: the sessions it started (session/start), the
   * ones it started a turn in (turn/start), the ones whose `events()` it reads, and (stdio) every
   * other session the connection carries. Approvals already pending when a session becomes
   * followed, or when the handler is set, are asked too. While a handler is set, the client keeps
   * an event stream open per followed session it does not otherwise hear about (HTTP: a
   * GET /events each, until the session is at rest again after its turn; stdio: a
   * session/subscribe). An approval is answered once, and only while it is still pending.
   * Returns the function that removes the handler; with none left, those streams close.
   */
  onApproval(handler: ApprovalHandler): () => void;
  close(): Promise<void>;
}

function validateResult<M extends MethodName>(method: M, raw: unknown): ResultOf<M> {
  const parsed = METHODS[method].result.safeParse(raw);
  if (!parsed.success) {
    throw protocolViolation(`the server's result for ${method} does not match the protocol`, {
      issues: wireIssues(parsed.error.issues),
    });
  }
  return parsed.data as ResultOf<M>;
}

/**
 * A raw notification as a typed one; undefined for a method this client does not know (a newer
 * server may add some: ignoring them is what keeps old clients working).
 */
export function validateNotification(raw: unknown): Notification | undefined {
  if (raw instanceof RpcError) throw raw;
  const envelope = notificationEnvelope.safeParse(raw);
  if (!envelope.success)
    throw protocolViolation("the server sent a message that is not a JSON-RPC notification");
  const { method, params } = envelope.data;
  if (!isNotificationName(method)) return undefined;
  const parsed = NOTIFICATIONS[method].safeParse(params);
  if (!parsed.success) {
    throw protocolViolation(`the server's ${method} notification does not match the protocol`, {
      issues: wireIssues(parsed.error.issues),
    });
  }
  return { jsonrpc: "2.0", method, params: parsed.data } as Notification;
}

export function createClient(transport: Transport): HarnessClient {
  const handlers = new Set<ApprovalHandler>();
  const seenApprovals = new Set<string>();
  const closing = new AbortController();

  const request = async <M extends MethodName>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> => {
    // Checked here too, so a caller without types (plain JS) learns of a typo before anything is sent.
    if (!isMethodName(method))
      throw new RpcError(ErrorCode.MethodNotFound, `method not found: ${String(method)}`);
    const checked = METHODS[method].params.safeParse(params);
    if (!checked.success) {
      throw new RpcError(ErrorCode.InvalidParams, `invalid params for ${method}`, {
        issues: wireIssues(checked.error.issues),
      });
    }
    const result = validateResult(method, await transport.call(method, params));
    const session = (result as { session?: unknown }).session;
    if (method === "session/start" && typeof session === "string") {
      // The server sends a stdio connection the sessions it starts.
      if (global) carried.add(session);
      follow(session);
    }
    if (method === "turn/start" && typeof session === "string") follow(session, true);
    if (method === "session/subscribe") carried.add((params as { session: string }).session);
    return result;
  };

  /** Ask the handlers about one approval, once, if it is still pending when we get to it. */
  const answer = async (approval: ApprovalRequested): Promise<void> => {
    const handler = [...handlers][0];
    if (handler === undefined || seenApprovals.has(approval.approval_id)) return;
    seenApprovals.add(approval.approval_id);
    try {
      // A replayed approval/requested may long be decided: only a pending one is asked about.
      const { approvals } = await request("approval/list", { session: approval.session });
      if (!approvals.some((a) => a.approval_id === approval.approval_id)) return;
      const decision = await handler(approval);
      await request("approval/respond", { approval_id: approval.approval_id, decision });
    } catch (error) {
      // Someone else answered first (another client, the timeout): nothing left to do.
      if (error instanceof RpcError && error.code === ErrorCode.Conflict) return;
      if (!closing.signal.aborted)
        process.emitWarning(`harness client: approval ${approval.approval_id}: ${String(error)}`);
    }
  };

  const tap = (notification: Notification): void => {
    if (notification.method === "approval/requested" && handlers.size > 0) void answer(notification.params);
  };

  const global = transport.onNotification !== undefined;
  /** Sessions this client started or started a turn in: their approvals reach the handler. */
  const followed = new Set<string>();
  /** stdio: sessions the connection already carries (started or subscribed here). */
  const carried = new Set<string>();
  /** The open approval streams, by session, while a handler is set. */
  const watching = new Map<string, AbortController>();
  /** HTTP: the seq the next approval stream of a session starts at (what came before was tapped). */
  const watchedUpTo = new Map<string, number>();

  /** Ask about what is pending in `session` now (notifications for it may have gone by). */
  const answerPending = async (session: string): Promise<void> => {
    try {
      const { approvals } = await request("approval/list", { session });
      for (const approval of approvals) void answer(approval);
    } catch (error) {
      if (!closing.signal.aborted)
        process.emitWarning(`harness client: approvals of ${session}: ${String(error)}`);
    }
  };

  /**
   * Make sure the approvals of a followed session reach the handlers, while there are any.
   * `turn`: this client just started a turn there; an HTTP watch still open may be about to end
   * on the previous turn's status, so a new one takes over from where it got to.
   */
  const watch = (session: string, turn = false): void => {
    if (handlers.size === 0 || closing.signal.aborted) return;
    const open = watching.get(session);
    if (open !== undefined && !(turn && !global)) return;
    open?.abort();
    const stop = new AbortController();
    watching.set(session, stop);
    void answerPending(session);
    // stdio: the connection's notifications all reach `tap` already, once it carries the session.
    if (global) {
      if (carried.has(session)) return;
      carried.add(session);
    }
    const signal = AbortSignal.any([stop.signal, closing.signal]);
    transport
      .events(session, watchedUpTo.get(session) ?? 0, signal, (raw) => {
        if (global || signal.aborted) return;
        try {
          const notification = validateNotification(raw);
          if (notification?.params.session !== session) return;
          tap(notification);
          if ("seq" in notification.params)
            watchedUpTo.set(session, Math.max(watchedUpTo.get(session) ?? 0, notification.params.seq + 1));
          // HTTP: a session at rest asks nothing, and the server caps the streams an identity may
          // hold open: the watch ends with the turn (session/status is live only, never replayed)
          // and the next session/start or turn/start of this client opens it again.
          if (notification.method === "session/status" && !ASKING.has(notification.params.status)) {
            watching.delete(session);
            stop.abort();
          }
        } catch {
          // A broken stream is reported to whoever reads events(); the watch just ends.
        }
      })
      .catch((error: unknown) => {
        if (!signal.aborted) process.emitWarning(`harness client: approvals of ${session}: ${String(error)}`);
      })
      .finally(() => {
        if (watching.get(session) === stop) watching.delete(session);
      });
  };

  const follow = (session: string, turn = false): void => {
    followed.add(session);
    watch(session, turn);
  };
  transport.onNotification?.((raw) => {
    let notification: Notification | undefined;
    try {
      notification = validateNotification(raw);
    } catch {
      return; // reported to the session's iterators; nothing to answer
    }
    if (notification) tap(notification);
  });

  const events = (session: string, opts: EventsOptions = {}): AsyncIterableIterator<Notification> => {
    // stdio: reading events subscribes the connection to the session (it stays subscribed).
    if (global) carried.add(session);
    const stop = new AbortController();
    const signals = [stop.signal, closing.signal, ...(opts.signal ? [opts.signal] : [])];
    const signal = AbortSignal.any(signals);
    const queue = new AsyncQueue<Notification>(() => stop.abort());
    const order = new SessionOrder(opts.fromSeq ?? 0, (n) => {
      if (!global) tap(n);
      queue.push(n);
    });
    const onAbort = () => {
      order.stop();
      queue.end();
    };
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    transport
      .events(session, opts.fromSeq ?? 0, signal, (raw) => {
        if (signal.aborted) return;
        try {
          const notification = validateNotification(raw);
          if (notification && notification.params.session === session) order.push(notification);
        } catch (error) {
          order.stop();
          queue.fail(error);
        }
      })
      .then(
        () => queue.end(),
        (error: unknown) => (signal.aborted ? queue.end() : queue.fail(error)),
      );
    return queue;
  };

  return {
    request,
    initialize: (params = {}) => request("initialize", params),
    startSession: (params) => request("session/start", params),
    startTurn: (session, input) => request("turn/start", { session, input }),
    steer: async (session, input) => {
      await request("turn/steer", { session, input });
    },
    interrupt: async (session) => {
      await request("turn/interrupt", { session });
    },
    listApprovals: async (session) =>
      (await request("approval/list", session === undefined ? {} : { session })).approvals,
    respond: async (approvalId, decision) => {
      await request("approval/respond", { approval_id: approvalId, decision });
    },
    fork: (session, atSeq) =>
      request("session/fork", atSeq === undefined ? { session } : { session, at_seq: atSeq }),
    compact: (session, instructions) =>
      request("session/compact", instructions === undefined ? { session } : { session, instructions }),
    read: (session, opts = {}) =>
      request("session/read", {
        session,
        ...(opts.fromSeq === undefined ? {} : { from_seq: opts.fromSeq }),
        ...(opts.limit === undefined ? {} : { limit: opts.limit }),
      }),
    verify: (session) => request("session/verify", { session }),
    list: async (workspace) =>
      (await request("session/list", workspace === undefined ? {} : { workspace })).sessions,
    shutdown: async () => {
      await request("shutdown", {});
    },
    events,
    onApproval(handler) {
      handlers.add(handler);
      for (const session of followed) watch(session);
      return () => {
        handlers.delete(handler);
        if (handlers.size > 0) return;
        for (const stop of watching.values()) stop.abort();
        watching.clear();
      };
    },
    async close() {
      closing.abort();
      await transport.close();
    },
  };
}
