import type { EngineListener, RunSummary } from "../engine/options.js";
import type { EventData } from "../journal/vocabulary.js";
import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import { ClientModel } from "./client-model.js";

/** A journaled tool result, as the engine recorded it. */
export type RecordedResult = EventData<"tool.result">;

/** The runtime asks a person: the MCP client is asked to answer (see approvals.ts). */
export interface ApprovalAsk {
  request: ApprovalRequest;
  answer(decision: ApprovalDecision): void;
}

/** What a waiting tools/call learns next about its call. */
export type CallProgress =
  | { kind: "result"; result: RecordedResult }
  | { kind: "approval"; ask: ApprovalAsk }
  | { kind: "stopped"; why: string };

/** Runs the served session's engine: the embedder (the CLI) builds it with the setup it owns. */
export type SessionStarter = (
  model: ClientModel,
  listener: EngineListener,
  signal: AbortSignal,
) => Promise<RunSummary>;

/** How long a call waits for the client to answer an approval before it is denied. */
export const APPROVAL_TIMEOUT_MS = 10 * 60_000;

interface PendingCall {
  id: string;
  /** Whether the client said it can answer elicitation requests. */
  canElicit: boolean;
  /** Events for the waiting request, in order. */
  events: CallProgress[];
  /** The client's cancellation of this call (notifications/cancelled). */
  cancel: AbortController;
  wake: (() => void) | undefined;
}

/**
 * The session an MCP server journals its clients' calls in: one engine run whose "model" is
 * the client (ClientModel), started with the server and ended when it stops. A tool call from
 * the client is submitted, becomes a journaled reply, runs through the runtime (validation,
 * policy, approval, sandbox, journal), and its recorded `tool.result` is what the client gets.
 */
export class ServedSession {
  readonly model = new ClientModel();
  readonly approver: ApprovalPort;
  private readonly pending = new Map<string, PendingCall>();
  /** Questions the client has not answered yet: denied at once when the session closes. */
  private readonly unanswered = new Set<(reason: string) => void>();
  private closing = false;
  private readonly controller = new AbortController();
  private counter = 0;
  private ended: string | undefined;
  /** Why the engine failed (a refused journal, a bad setup), kept for the embedder to report. */
  failure: unknown;
  private running: Promise<RunSummary | undefined> | undefined;

  constructor(readonly sessionId: string) {
    this.approver = { request: (request, signal) => this.askClient(request, signal) };
  }

  /** Starts the engine; resolves once the session has been recorded as started (or failed). */
  start(starter: SessionStarter): Promise<void> {
    let started!: () => void;
    const ready = new Promise<void>((resolve) => {
      started = resolve;
    });
    const listener: EngineListener = {
      record: (record) => {
        if (record.type === "session.started") started();
        if (record.type === "tool.result")
          this.push(record.data.call_id, { kind: "result", result: record.data });
      },
    };
    this.running = starter(this.model, listener, this.controller.signal).then(
      (summary) => {
        this.end(`the served session ${this.sessionId} ended (${summary.status})`);
        started();
        return summary;
      },
      (error: unknown) => {
        this.failure = error;
        this.end(
          `the served session ${this.sessionId} failed: ${error instanceof Error ? error.message : "error"}`,
        );
        started();
        throw error;
      },
    );
    return ready;
  }

  /** Why calls are no longer taken, or undefined while the session runs. */
  get stopped(): string | undefined {
    return this.ended;
  }

  /** Hands a client's call to the session; follow it with `next`. */
  submit(name: string, args: JsonObject, canElicit: boolean): string {
    if (this.ended) throw new Error(this.ended);
    this.counter += 1;
    const id = `mcp-${this.counter}`;
    this.pending.set(id, { id, canElicit, events: [], cancel: new AbortController(), wake: undefined });
    this.model.submit({ id, name, arguments: args });
    return id;
  }

  /** The next thing that happens to a call: its result, an approval to ask, or the session's end. */
  async next(callId: string): Promise<CallProgress> {
    const call = this.pending.get(callId);
    if (!call) return { kind: "stopped", why: this.ended ?? "unknown call" };
    while (call.events.length === 0) {
      if (this.ended) return { kind: "stopped", why: this.ended };
      await new Promise<void>((resolve) => {
        call.wake = resolve;
      });
      call.wake = undefined;
    }
    const event = call.events.shift()!;
    if (event.kind === "result") this.pending.delete(callId);
    return event;
  }

  /**
   * The client cancelled the call: its signal fires, so the runtime stops it like any cancelled
   * call (a shell command's process tree is killed) and journals a cancelled result; a call not
   * yet started is cancelled as it starts. The result still comes through `next`.
   */
  cancel(callId: string, reason = "the MCP client cancelled the call"): void {
    this.pending.get(callId)?.cancel.abort(reason);
  }

  /** The client is gone: every call it is still waiting on is stopped as a cancelled call. */
  cancelAll(reason = "the MCP client ended its session"): void {
    for (const call of this.pending.values()) call.cancel.abort(reason);
  }

  /** The runtime's per-call signal (RuntimeEnvironment.callSignal). */
  readonly callSignal = (callId: string): AbortSignal | undefined => this.pending.get(callId)?.cancel.signal;

  /** The client is gone or the server stops: the session ends with a reply without calls. */
  async close(): Promise<RunSummary | undefined> {
    this.closing = true;
    this.model.close();
    // Nobody is left to answer: a waiting approval would hold the session open until it timed out.
    for (const deny of [...this.unanswered]) deny("the MCP client closed the connection");
    try {
      return await this.running;
    } catch {
      return undefined;
    }
  }

  /** Stops at once (a second signal): the engine is cancelled at its next safe point. */
  abort(): void {
    this.controller.abort();
  }

  private push(callId: string, event: CallProgress): void {
    const call = this.pending.get(callId);
    if (!call) return;
    call.events.push(event);
    call.wake?.();
  }

  private end(why: string): void {
    this.ended ??= why;
    for (const call of this.pending.values()) call.wake?.();
  }

  /**
   * The runtime's approval seam for served calls. A client that declared no elicitation
   * capability cannot be asked: denied, as any run without a person to ask. Otherwise the
   * waiting tools/call request turns the question into an elicitation and answers it.
   */
  private async askClient(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const call = this.pending.get(request.callId);
    if (this.closing) {
      return {
        decision: "deny",
        scope: "once",
        by: "mcp-client",
        reason: "the MCP client closed the connection",
      };
    }
    if (signal.aborted) return { decision: "deny", scope: "once", by: "mcp-client", reason: "cancelled" };
    if (!call?.canElicit) {
      return {
        decision: "deny",
        scope: "once",
        by: "mcp-client",
        reason: "the MCP client cannot answer approval requests (it declared no elicitation capability)",
      };
    }
    return new Promise<ApprovalDecision>((resolve) => {
      let settled = false;
      const settle = (decision: ApprovalDecision) => {
        if (settled) return;
        settled = true;
        this.unanswered.delete(deny);
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        resolve(decision);
      };
      const deny = (reason: string) => settle({ decision: "deny", scope: "once", by: "mcp-client", reason });
      const onAbort = () => deny("cancelled");
      const timer = setTimeout(
        () => deny(`the MCP client did not answer within ${APPROVAL_TIMEOUT_MS / 60_000} minutes`),
        APPROVAL_TIMEOUT_MS,
      );
      timer.unref();
      signal.addEventListener("abort", onAbort, { once: true });
      this.unanswered.add(deny);
      this.push(request.callId, { kind: "approval", ask: { request, answer: settle } });
    });
  }
}
