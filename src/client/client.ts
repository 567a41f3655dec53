import {
  type ApprovalDecision,
  type ApprovalRequested,
  ErrorCode,
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

export type ApprovalHandler = (approval: ApprovalRequested) => Promise<ApprovalDecision>;

export interface EventsOptions {
  /** Replay from this seq (default 1: the whole session), then follow live. */
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
   * Answers `approval/requested` of the sessions this client follows (over stdio: every session
   * the connection carries; over HTTP: the sessions whose `events()` are being read). An approval
   * is answered once, and only while it is still pending. Returns the function that removes it.
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

  const request = async <M extends MethodName>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> =>
    validateResult(method, await transport.call(method, params));

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
    const stop = new AbortController();
    const signals = [stop.signal, closing.signal, ...(opts.signal ? [opts.signal] : [])];
    const signal = AbortSignal.any(signals);
    const queue = new AsyncQueue<Notification>(() => stop.abort());
    const order = new SessionOrder(opts.fromSeq ?? 1, (n) => {
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
      .events(session, opts.fromSeq ?? 1, signal, (raw) => {
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
      return () => handlers.delete(handler);
    },
    async close() {
      closing.abort();
      await transport.close();
    },
  };
}
