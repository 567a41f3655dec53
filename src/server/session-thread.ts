import { isMainThread, type MessagePort, parentPort, threadId, workerData } from "node:worker_threads";
import type { RunOptions } from "../api/methods.js";
import type { EngineListener } from "../engine/options.js";
import type { QuotaHold, QuotaLeft, QuotaPort, QuotaSpend } from "../engine/quota-port.js";
import { hostManySessions } from "../journal/fsync-threads.js";
import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../runtime/ports.js";
import { registerSecretPath } from "../session/harness-secrets.js";
import { watchProcessGroups } from "../shared/process-groups.js";
import type { Identity } from "./identities.js";
import type { OpenedSession, SessionRun } from "./ports.js";
import { serveSessionFactory } from "./session-factory.js";
import {
  errorFromWire,
  errorToWire,
  type FromThread,
  type OpenedReply,
  type ThreadSetup,
  type ToThread,
} from "./thread-messages.js";

/*
 * A session thread of `harness serve` (threaded-factory.ts starts it): it builds sessions with the
 * same serveSessionFactory as the main thread would, runs their turns on its own event loop, and
 * talks to the main thread only in messages: records, approval asks and quota reservations out;
 * opens, turns, steers, interrupts, decisions and closes in.
 */

/** Records that end a turn (server/notifications.ts: turn/completed). */
const TURN_ENDS = new Set(["run.finished", "run.stopped", "run.cancelled", "turn.interrupted"]);

interface Hosted {
  opened: OpenedSession;
  run: SessionRun | undefined;
}

class SessionThread {
  readonly #sessions = new Map<string, Hosted>();
  /**
   * Per session, an approval.requested record not yet sent: it goes out with the ask it announces
   * (or before the next record), so a client answering approval/requested at once finds the ask
   * waiting on the main thread, as in-process.
   */
  readonly #asking = new Map<string, FromThread[]>();
  readonly #approvals = new Map<number, (decision: ApprovalDecision) => void>();
  readonly #quota = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
  #nextId = 0;
  readonly #factory;

  constructor(
    private readonly port: MessagePort,
    setup: ThreadSetup,
  ) {
    const log = (line: string) => this.#post({ type: "log", line });
    this.#factory = serveSessionFactory({
      log,
      ...(setup.quotas ? { quotas: (identity: string) => this.#quotaPort(identity) } : {}),
    });
  }

  handle(message: ToThread): void {
    switch (message.type) {
      case "open":
        void this.#open(message.id, message.request);
        return;
      case "run":
        this.#run(message.id, message.session, message.kind, message.input);
        return;
      case "steer": {
        const run = this.#sessions.get(message.session)?.run;
        this.#settle(message.id, run ? run.steer(message.text) : Promise.resolve());
        return;
      }
      case "interrupt":
        this.#sessions.get(message.session)?.run?.interrupt();
        return;
      case "close": {
        const hosted = this.#sessions.get(message.session);
        this.#sessions.delete(message.session);
        this.#settle(message.id, hosted ? hosted.opened.close() : Promise.resolve());
        return;
      }
      case "decision": {
        const settle = this.#approvals.get(message.approval);
        this.#approvals.delete(message.approval);
        settle?.(message.decision as ApprovalDecision);
        return;
      }
      case "quota.reply": {
        const waiting = this.#quota.get(message.id);
        this.#quota.delete(message.id);
        if (message.ok) waiting?.resolve(message.value);
        else waiting?.reject(errorFromWire(message.error));
        return;
      }
    }
  }

  async #open(id: number, request: Extract<ToThread, { type: "open" }>["request"]): Promise<void> {
    try {
      const opened = await this.#factory.open({
        workspace: request.workspace,
        ...(request.script !== undefined ? { script: request.script } : {}),
        ...(request.sessionId !== undefined ? { sessionId: request.sessionId } : {}),
        options: request.options as RunOptions,
        identity: request.identity as Identity,
        approver: (sessionId) => this.#approver(sessionId),
      });
      this.#sessions.set(opened.sessionId, { opened, run: undefined });
      const reply: OpenedReply = {
        sessionId: opened.sessionId,
        workspace: opened.workspace,
        records: opened.records as unknown[],
        refused: opened.refusedCommands ?? {},
      };
      this.#post({ type: "reply", id, ok: true, value: reply });
    } catch (error) {
      this.#post({ type: "reply", id, ok: false, error: errorToWire(error) });
    }
  }

  #run(id: number, session: string, kind: "turn" | "compact", input: string | undefined): void {
    const hosted = this.#sessions.get(session);
    if (hosted === undefined) {
      this.#post({
        type: "reply",
        id,
        ok: false,
        error: { kind: "error", name: "Error", message: `session ${session} is not open in this thread` },
      });
      return;
    }
    let run: SessionRun;
    const held: FromThread[] = [];
    try {
      const listener = this.#listener(session, held);
      run =
        kind === "turn" ? hosted.opened.turn(input ?? "", listener) : hosted.opened.compact(input, listener);
    } catch (error) {
      this.#post({ type: "reply", id, ok: false, error: errorToWire(error) });
      return;
    }
    hosted.run = run;
    // The turn's end goes out with the run's answer, in one go: a client that sees turn/completed
    // and starts the next turn at once finds the session idle, as in-process.
    const answer = (reply: FromThread) => {
      if (hosted.run === run) hosted.run = undefined;
      this.#postAll([...this.#takeAsking(session), ...held.splice(0), reply]);
    };
    run.run().then(
      (value) => answer({ type: "reply", id, ok: true, value }),
      (error: unknown) => answer({ type: "reply", id, ok: false, error: errorToWire(error) }),
    );
  }

  /** Records and deltas as the engine hands them; what the main thread's hub listens for. */
  #listener(session: string, held: FromThread[]): EngineListener {
    return {
      record: (record) => {
        const message: FromThread = { type: "record", session, record };
        this.#postAll(this.#takeAsking(session));
        if (held.length > 0 || TURN_ENDS.has(record.type)) held.push(message);
        else if (record.type === "approval.requested") this.#asking.set(session, [message]);
        else this.#post(message);
      },
      agentRecord: (path, record) => this.#post({ type: "agent-record", session, path, record }),
      stream: (event) => {
        if (event.type !== "text_delta" && event.type !== "reasoning_delta") return;
        this.#post({ type: "stream", session, event });
      },
    };
  }

  /** An ask goes to the main thread's wire approver; an abort here withdraws it there. */
  #approver(session: string): ApprovalPort {
    return {
      request: (request: ApprovalRequest, signal: AbortSignal) =>
        new Promise<ApprovalDecision>((resolve) => {
          const approval = ++this.#nextId;
          const onAbort = () => this.#post({ type: "approval.cancel", approval });
          this.#approvals.set(approval, (decision) => {
            signal.removeEventListener("abort", onAbort);
            resolve(decision);
          });
          signal.addEventListener("abort", onAbort, { once: true });
          this.#postAll([...this.#takeAsking(session), { type: "approval", session, approval, request }]);
        }),
    };
  }

  /** An identity's quota, held by the main thread (one for every thread): reserve and settle cross. */
  #quotaPort(identity: string): QuotaPort {
    return {
      scope: `identity:${identity}`,
      reserve: async (estimate) => {
        const answer = (await this.#ask((id) => ({ type: "quota.reserve", id, identity, estimate }))) as
          | { ok: true; hold: number; left?: QuotaLeft }
          | { ok: false; why: string; left?: QuotaLeft };
        if (!answer.ok) return answer as QuotaHold;
        return {
          ok: true,
          ...(answer.left !== undefined ? { left: answer.left } : {}),
          settle: (actual: QuotaSpend) =>
            this.#ask((id) => ({ type: "quota.settle", id, hold: answer.hold, actual })) as Promise<
              QuotaLeft | undefined
            >,
        };
      },
    };
  }

  #ask(message: (id: number) => FromThread): Promise<unknown> {
    const id = ++this.#nextId;
    return new Promise((resolve, reject) => {
      this.#quota.set(id, { resolve, reject });
      this.#post(message(id));
    });
  }

  #settle(id: number, work: Promise<unknown>): void {
    work.then(
      (value) => this.#post({ type: "reply", id, ok: true, ...(value !== undefined ? { value } : {}) }),
      (error: unknown) => this.#post({ type: "reply", id, ok: false, error: errorToWire(error) }),
    );
  }

  #takeAsking(session: string): FromThread[] {
    const asking = this.#asking.get(session) ?? [];
    this.#asking.delete(session);
    return asking;
  }

  /**
   * Messages that must be handled together go as one: two posts can be read apart (this thread
   * may be descheduled between them), and a client could act on the first before the second.
   */
  #postAll(messages: FromThread[]): void {
    if (messages.length === 1) this.#post(messages[0]!);
    else if (messages.length > 1) this.#post({ type: "batch", messages });
  }

  #post(message: FromThread): void {
    this.port.postMessage(message);
  }
}

function main(port: MessagePort, setup: ThreadSetup): void {
  for (const path of setup.secrets) registerSecretPath(path);
  // As the main thread of `harness serve` sets its process up: this thread's own group commit.
  hostManySessions(setup.fsyncThreads);
  watchProcessGroups({
    started: (pgid) => port.postMessage({ type: "groups", add: pgid } satisfies FromThread),
    ended: (pgid) => port.postMessage({ type: "groups", remove: pgid } satisfies FromThread),
  });
  const thread = new SessionThread(port, setup);
  port.on("message", (message: ToThread) => thread.handle(message));
  port.postMessage({ type: "ready", threadId } satisfies FromThread);
}

if (
  !isMainThread &&
  parentPort !== null &&
  (workerData as Partial<ThreadSetup> | null)?.sessionThread === true
)
  main(parentPort, workerData as ThreadSetup);
