import { performance } from "node:perf_hooks";
import type { HookKind, HookPoint, WrapPoint } from "../runtime/hook-points.js";
import type {
  AdmitOutcome,
  HookCallContext,
  HookContext,
  HookPort,
  HookRecord,
  WrapOutcome,
} from "../runtime/ports.js";
import { CodedError } from "../shared/coded-error.js";
import { deepFreeze } from "./approver.js";

/** What an admit hook must answer. */
export interface AdmitAnswer {
  decision: "allow" | "deny";
  reason?: string;
}

interface HookBase {
  /** Shown in records and denials. */
  name: string;
  /** Only calls of these tools; absent means every tool. */
  tools?: readonly string[];
  /** Default 5000 ms. For wrap hooks, time spent inside `next()` does not count. */
  timeoutMs?: number;
}

export interface NotifyHook extends HookBase {
  kind: "notify";
  point: HookPoint;
  run(context: HookContext, signal: AbortSignal): unknown;
}

export interface AdmitHook extends HookBase {
  kind: "admit";
  point: HookPoint;
  /** Answer `{decision, reason?}`; anything else, a throw or a timeout denies. */
  run(context: HookContext, signal: AbortSignal): unknown;
}

export interface WrapHook extends HookBase {
  kind: "wrap";
  point?: WrapPoint;
  /** Must call `next()` once and return exactly what it resolved to (or rethrow what it threw). */
  run(context: HookContext, next: () => Promise<unknown>, signal: AbortSignal): unknown;
}

export type Hook = NotifyHook | AdmitHook | WrapHook;

export const HOOK_VIOLATION = "HOOK_VIOLATION";

export interface HookRunnerOptions {
  defaultTimeoutMs?: number;
  /** Where contained hook failures are logged (details stay out of the journal). */
  log?: (line: string) => void;
}

export const DEFAULT_HOOK_TIMEOUT_MS = 5_000;
const MAX_REASON_LENGTH = 500;

/**
 * Runs hooks at the lifecycle points of a call. Hooks observe (notify), veto (admit) or
 * surround execution (wrap); none can allow what policy denied, change arguments or forge a
 * result. Every decision comes back as a record for the engine to journal. Hooks see a call's
 * facts and, after execution, its status (HookCallContext), never its content.
 */
export class HookRunner implements HookPort {
  readonly #hooks: readonly Hook[];
  readonly #defaultTimeoutMs: number;
  readonly #log: (line: string) => void;

  constructor(hooks: readonly Hook[], options: HookRunnerOptions = {}) {
    this.#hooks = [...hooks];
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS;
    this.#log = options.log ?? (() => undefined);
  }

  /** Whether any hook applies; lets the runtime skip building contexts. */
  has(kind: HookKind, point: HookPoint | WrapPoint, tool: string): boolean {
    return this.#select(kind, point, tool).length > 0;
  }

  /** Run observers concurrently. Never throws and never vetoes; failures become `error` records. */
  async notify(point: HookPoint, input: HookCallContext): Promise<HookRecord[]> {
    const hooks = this.#select("notify", point, input.tool) as NotifyHook[];
    if (hooks.length === 0) return [];
    const context = freezeContext(point, input);
    return Promise.all(
      hooks.map(async (hook) => {
        const started = performance.now();
        const settled = await this.#runBounded(hook, (signal) => hook.run(context, signal));
        const record = recordOf(context, hook, started);
        if (settled.kind === "value") return { ...record, decision: "observed" as const };
        this.#log(`hook ${hook.name} at ${point}: ${settled.detail}`);
        return { ...record, decision: "error" as const, reason: settled.reason };
      }),
    );
  }

  /**
   * Ask admit hooks in order; the first deny stops. A throw, a timeout or an answer that is not
   * `{decision: "allow"|"deny"}` denies (fail closed).
   */
  async admit(point: HookPoint, input: HookCallContext): Promise<AdmitOutcome> {
    const hooks = this.#select("admit", point, input.tool) as AdmitHook[];
    const records: HookRecord[] = [];
    if (hooks.length === 0) return { allowed: true, records };
    const context = freezeContext(point, input);
    for (const hook of hooks) {
      const started = performance.now();
      const settled = await this.#runBounded(hook, (signal) => hook.run(context, signal));
      const base = recordOf(context, hook, started);
      if (settled.kind !== "value") {
        this.#log(`hook ${hook.name} at ${point}: ${settled.detail}`);
        records.push({ ...base, decision: "error", reason: settled.reason });
        return { allowed: false, hook: hook.name, reason: settled.reason, records };
      }
      const answer = parseAdmitAnswer(settled.value);
      if (answer === undefined) {
        const reason = "malformed answer (expected {decision: allow|deny, reason?})";
        records.push({ ...base, decision: "error", reason });
        return { allowed: false, hook: hook.name, reason, records };
      }
      const record: HookRecord = { ...base, decision: answer.decision };
      if (answer.reason !== undefined) record.reason = answer.reason;
      records.push(record);
      if (answer.decision === "deny") {
        const outcome: AdmitOutcome = { allowed: false, hook: hook.name, records };
        if (answer.reason !== undefined) outcome.reason = answer.reason;
        return outcome;
      }
    }
    return { allowed: true, records };
  }

  /**
   * Execute through the wrap hooks (the first registered is outermost). `execute` runs at most
   * once, and only when every hook called `next()`.
   */
  async wrap<T>(input: HookCallContext, execute: () => Promise<T>): Promise<WrapOutcome<T>> {
    const hooks = this.#select("wrap", "execute", input.tool) as WrapHook[];
    const records: HookRecord[] = [];
    let execution: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    let violation: { hook: string; message: string } | undefined;
    const context = freezeContext("execute", input);

    const runHandler = async (): Promise<T> => {
      try {
        const value = await execute();
        execution = { ok: true, value };
        return value;
      } catch (error) {
        execution = { ok: false, error };
        throw error;
      }
    };

    const layer = (index: number): Promise<T> => {
      const hook = hooks[index];
      if (hook === undefined) return runHandler();
      return this.#runWrapLayer(
        hook,
        context,
        () => layer(index + 1),
        records,
        (message) => {
          violation ??= { hook: hook.name, message };
        },
      );
    };

    try {
      const value = await layer(0);
      if (violation === undefined) return { status: "ok", value, records };
    } catch (error) {
      if (violation === undefined) return { status: "threw", error, records };
    }
    const reported = violation!;
    const outcome: WrapOutcome<T> = {
      status: "violation",
      code: HOOK_VIOLATION,
      hook: reported.hook,
      message: `wrap hook ${reported.hook} ${reported.message}`,
      executed: execution !== undefined,
      records,
    };
    if (execution !== undefined) outcome.execution = execution;
    return outcome;
  }

  /** One wrap hook around `inner`. Resolves or rejects only with what `inner` produced. */
  async #runWrapLayer<T>(
    hook: WrapHook,
    context: HookContext,
    inner: () => Promise<T>,
    records: HookRecord[],
    report: (message: string) => void,
  ): Promise<T> {
    const started = performance.now();
    const timeoutMs = hook.timeoutMs ?? this.#defaultTimeoutMs;
    const controller = new AbortController();
    let closed = false;
    let innerPromise: Promise<T> | undefined;
    let innerResult: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    let timer: NodeJS.Timeout | undefined;
    let onTimeout: () => void = () => undefined;
    const arm = (): void => {
      timer = setTimeout(() => onTimeout(), timeoutMs);
    };

    // Memoized: calling next twice does not execute twice. After the layer closed (timeout),
    // a late call executes nothing.
    const next = (): Promise<unknown> => {
      if (innerPromise !== undefined) return innerPromise;
      if (closed) return handled(Promise.reject(new Error("next() called after the hook timed out")));
      clearTimeout(timer);
      innerPromise = inner().then(
        (value) => {
          innerResult = { ok: true, value };
          if (!closed) arm();
          return value;
        },
        (error: unknown) => {
          innerResult = { ok: false, error };
          if (!closed) arm();
          throw error;
        },
      );
      return handled(innerPromise);
    };

    type Settled =
      | { kind: "returned"; value: unknown }
      | { kind: "threw"; error: unknown }
      | { kind: "timeout" };
    const settled = await new Promise<Settled>((resolve) => {
      onTimeout = () => resolve({ kind: "timeout" });
      arm();
      Promise.resolve()
        .then(() => hook.run(context, next, controller.signal))
        .then(
          (value) => resolve({ kind: "returned", value }),
          (error: unknown) => resolve({ kind: "threw", error }),
        );
    });
    closed = true;
    clearTimeout(timer);
    if (settled.kind === "timeout") controller.abort();

    // When the inner layer is still running (the hook timed out after calling next), wait for it
    // so the outcome names what really happened.
    if (innerPromise !== undefined && innerResult === undefined) await innerPromise.catch(() => undefined);

    const record = recordOf(context, hook, started);
    const fail = (message: string): never => {
      records.push({ ...record, decision: "error", reason: message });
      report(message);
      throw new HookViolationError(hook.name, message);
    };

    if (innerResult === undefined) {
      if (settled.kind === "timeout") fail(`timed out after ${timeoutMs} ms without calling next()`);
      if (settled.kind === "threw") fail(`failed before calling next() (${errorName(settled.error)})`);
      fail("returned without calling next(); nothing was executed");
    }
    const real = innerResult!;
    if (settled.kind === "timeout") fail(`did not finish within ${timeoutMs} ms after next() settled`);
    if (real.ok && settled.kind === "returned" && settled.value === real.value) {
      records.push({ ...record, decision: "observed" });
      return real.value;
    }
    if (!real.ok && settled.kind === "threw" && settled.error === real.error) {
      records.push({ ...record, decision: "observed" });
      throw real.error;
    }
    if (real.ok && settled.kind === "threw") fail(`threw after next() succeeded; its error is discarded`);
    return fail("returned a result it did not get from next(); the forged value is discarded");
  }

  #select(kind: HookKind, point: HookPoint | WrapPoint, tool: string): Hook[] {
    return this.#hooks.filter(
      (hook) =>
        hook.kind === kind &&
        (hook.kind === "wrap" ? point === "execute" : hook.point === point) &&
        (hook.tools === undefined || hook.tools.includes(tool)),
    );
  }

  /** Run a notify/admit hook with its timeout; its signal aborts when time is up. */
  async #runBounded(
    hook: NotifyHook | AdmitHook,
    run: (signal: AbortSignal) => unknown,
  ): Promise<{ kind: "value"; value: unknown } | { kind: "failed"; reason: string; detail: string }> {
    const timeoutMs = hook.timeoutMs ?? this.#defaultTimeoutMs;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<{ kind: "failed"; reason: string; detail: string }>((resolve) => {
      timer = setTimeout(() => {
        const reason = `timed out after ${timeoutMs} ms`;
        resolve({ kind: "failed", reason, detail: reason });
      }, timeoutMs);
    });
    const attempt = Promise.resolve()
      .then(() => run(controller.signal))
      .then(
        (value) => ({ kind: "value" as const, value }),
        (error: unknown) => ({
          kind: "failed" as const,
          reason: hookFailureReason(error),
          detail: error instanceof Error ? error.message : String(error),
        }),
      );
    try {
      return await Promise.race([attempt, timeout]);
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
  }
}

/** Thrown into outer wrap layers when an inner one broke the contract. */
export class HookViolationError extends CodedError<typeof HOOK_VIOLATION> {
  override readonly name = "HookViolationError";
  readonly hook: string;
  constructor(hook: string, message: string) {
    super(HOOK_VIOLATION, `wrap hook ${hook} ${message}`);
    this.hook = hook;
  }
}

/** A failure whose reason is safe to journal (e.g. "exited with status 1"); others are generic. */
export class HookFailure extends Error {
  override readonly name = "HookFailure";
}

/**
 * Mark a promise as observed: a wrap hook that calls next() and ignores a failure must not
 * crash the process with an unhandled rejection. Callers awaiting it still see the rejection.
 */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

function hookFailureReason(error: unknown): string {
  if (error instanceof HookFailure) return truncate(error.message);
  return `threw an error (${errorName(error)})`;
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/** An admit answer, or undefined when the value is not `{decision: "allow"|"deny", reason?: string}`. */
export function parseAdmitAnswer(value: unknown): AdmitAnswer | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const candidate = value as Record<string, unknown>;
  if (candidate.decision !== "allow" && candidate.decision !== "deny") return undefined;
  if (candidate.reason !== undefined && typeof candidate.reason !== "string") return undefined;
  const answer: AdmitAnswer = { decision: candidate.decision };
  if (typeof candidate.reason === "string" && candidate.reason !== "")
    answer.reason = truncate(candidate.reason);
  return answer;
}

function truncate(text: string): string {
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH)}…` : text;
}

function freezeContext(point: HookPoint | WrapPoint, input: HookCallContext): HookContext {
  return deepFreeze(structuredClone({ ...input, point }));
}

function recordOf(context: HookContext, hook: Hook, started: number): Omit<HookRecord, "decision"> {
  return {
    call_id: context.callId,
    point: context.point,
    hook: hook.name,
    kind: hook.kind,
    duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
  };
}
