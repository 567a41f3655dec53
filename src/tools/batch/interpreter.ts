import type {
  QuickJSContext,
  QuickJSDeferredPromise,
  QuickJSHandle,
  QuickJSSyncVariant,
  QuickJSWASMModule,
} from "quickjs-emscripten-core";
import type { JsonValue } from "../../shared/json.js";

/**
 * A program runs in QuickJS compiled to WebAssembly: its own heap inside a wasm memory, no
 * binding to Node. What it can reach is what this module puts into its global object: the
 * language's built-ins without `Date` (no clock), and `tools`. Everything crossing the
 * boundary is a JSON string, so no host object is ever reachable from inside.
 */

/** The bounds a program runs under; each one exceeded ends it with that limit named. */
export interface ProgramLimits {
  /** Sub-calls the program may issue. */
  calls: number;
  /** Sub-calls running at once; more wait their turn in issue order. */
  concurrency: number;
  /** Sub-calls that may wait for a free slot; one more ends the program (`concurrency`). */
  waiting: number;
  /** Bytes of one sub-call's arguments or of one sub-result as the program receives it (JSON). */
  resultBytes: number;
  /** Bytes of all sub-results together. */
  totalBytes: number;
  /** Bytes of the program's return value (JSON). */
  returnBytes: number;
  /** Wall time from start to end, sub-calls included. */
  timeMs: number;
  /** The interpreter's heap. */
  memoryBytes: number;
  /** The interpreter's stack (deep recursion counts as memory). */
  stackBytes: number;
  /** Interrupt checks the interpreter may pass (QuickJS checks about every 10,000 steps). */
  instructions: number;
}

export const DEFAULT_PROGRAM_LIMITS: ProgramLimits = {
  calls: 64,
  concurrency: 8,
  waiting: 64,
  resultBytes: 256 * 1024,
  totalBytes: 4 * 1024 * 1024,
  returnBytes: 1024 * 1024,
  timeMs: 60_000,
  memoryBytes: 32 * 1024 * 1024,
  // Well under what Node's own stack allows the wasm frames beneath it.
  stackBytes: 256 * 1024,
  instructions: 4_000,
};

export type LimitName = "calls" | "concurrency" | "bytes" | "time" | "memory" | "instructions";

/** What a sub-call gives back: a value for the program, or an error it receives as a throw. */
export type HostReply =
  | { ok: true; value: JsonValue }
  | { ok: false; error: { code: string; message: string } & Record<string, JsonValue> };

/** Runs one sub-call; never rejects. */
export type HostCall = (name: string, args: JsonValue, signal: AbortSignal) => Promise<HostReply>;

type LimitEnd = { kind: "limit"; limit: LimitName; message: string };

export type ProgramEnd =
  | { kind: "returned"; json: string }
  | LimitEnd
  | { kind: "threw"; message: string }
  | { kind: "cancelled" };

/** Kept small: what the program threw, as a one-line message. */
const MESSAGE_CHARS = 2_000;

let loading: Promise<QuickJSWASMModule> | undefined;

/** The interpreter's wasm module, compiled once per process on first use. */
function quickjs(): Promise<QuickJSWASMModule> {
  loading ??= (async () => {
    // Loaded on first use: a session that never runs a program never compiles the interpreter.
    const [{ newQuickJSWASMModuleFromVariant }, loaded] = await Promise.all([
      import("quickjs-emscripten-core"),
      import("@jitl/quickjs-wasmfile-release-sync"),
    ]);
    // The variant is the package's default export; loaded as CommonJS (the CLI bundle), once more nested.
    const exported = loaded.default as unknown as QuickJSSyncVariant | { default: QuickJSSyncVariant };
    return newQuickJSWASMModuleFromVariant("default" in exported ? exported.default : exported);
  })();
  return loading;
}

/**
 * The harness side of the sandbox: `tools` is a proxy whose every property is an async
 * function sending `(name, JSON arguments)` to the host through `call`, which only this closure
 * holds. A reply is JSON; a failure becomes an Error carrying its fields (`code`, `call_id`, ...).
 * `JSON` is captured before the program runs, so a program replacing it fools only itself.
 */
const PRELUDE = `(function (call) {
  "use strict";
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const keys = Object.keys;
  const failure = (fields) => {
    const error = new Error(fields.message);
    for (const key of keys(fields)) if (key !== "message") error[key] = fields[key];
    return error;
  };
  const target = Object.freeze(Object.create(null));
  const tools = new Proxy(target, {
    get(_target, name) {
      if (typeof name !== "string") return undefined;
      return async (args) => {
        const reply = parse(await call(name, stringify(args === undefined ? {} : args)));
        if (!reply.ok) throw failure(reply.error);
        return reply.value;
      };
    },
  });
  Object.defineProperty(globalThis, "tools", { value: tools, enumerable: false, writable: false, configurable: false });
  return (value) => stringify(value === undefined ? null : value);
})`;

/**
 * Run `program` (the body of an async function) to its end: its return value as JSON, the
 * bound it went past, or what it threw. Sub-calls still running when it ends are aborted and
 * awaited, so each has its result before this resolves.
 */
export async function runProgram(
  program: string,
  host: HostCall,
  limits: ProgramLimits,
  signal: AbortSignal,
): Promise<ProgramEnd> {
  const module = await quickjs();
  const runtime = module.newRuntime();
  const started = Date.now();
  const deadline = started + limits.timeMs;
  let ended: LimitEnd | undefined;
  const end = (limit: LimitName, message: string) => {
    ended ??= { kind: "limit", limit, message };
    wake();
  };
  let polls = 0;
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(limits.stackBytes);
  // The only way to stop code that never yields: QuickJS asks this every few thousand steps.
  runtime.setInterruptHandler(() => {
    polls += 1;
    if (ended !== undefined || signal.aborted) return true;
    if (polls > limits.instructions)
      end(
        "instructions",
        `the program ran past ${limits.instructions} interrupt checks (about ${limits.instructions * 10_000} steps)`,
      );
    else if (Date.now() > deadline) end("time", `the program ran past its ${limits.timeMs} ms`);
    return ended !== undefined;
  });
  const vm = runtime.newContext({
    intrinsics: {
      BaseObjects: true,
      Date: false,
      Eval: true,
      StringNormalize: true,
      RegExp: true,
      JSON: true,
      Proxy: true,
      MapSet: true,
      TypedArrays: true,
      Promise: true,
    },
  });

  let wake: () => void = () => undefined;
  const aborter = new AbortController();
  const onAbort = () => wake();
  signal.addEventListener("abort", onAbort, { once: true });
  const pending = new Set<QuickJSDeferredPromise>();
  const running = new Set<Promise<void>>();
  const waiting: (() => void)[] = [];
  let issued = 0;
  let totalBytes = 0;

  const settle = (deferred: QuickJSDeferredPromise, reply: HostReply) => {
    if (!pending.has(deferred)) return;
    const json = JSON.stringify(reply);
    const bytes = Buffer.byteLength(json);
    totalBytes += bytes;
    if (bytes > limits.resultBytes)
      end("bytes", `a sub-result of ${bytes} bytes is over the ${limits.resultBytes}-byte bound`);
    else if (totalBytes > limits.totalBytes)
      end("bytes", `sub-results of ${totalBytes} bytes in all are over the ${limits.totalBytes}-byte bound`);
    if (ended !== undefined) return;
    pending.delete(deferred);
    const text = vm.newString(json);
    deferred.resolve(text);
    text.dispose();
    deferred.dispose();
    wake();
  };

  const start = (name: string, args: JsonValue, deferred: QuickJSDeferredPromise) => {
    const done = host(name, args, aborter.signal)
      .then(
        (reply) => settle(deferred, reply),
        () =>
          settle(deferred, { ok: false, error: { code: "RUNTIME_EXCEPTION", message: `${name} failed` } }),
      )
      .finally(() => {
        running.delete(done);
        const next = waiting.shift();
        if (next && ended === undefined) next();
        wake();
      });
    running.add(done);
  };

  const call = vm.newFunction("call", (nameHandle, argsHandle) => {
    const deferred = vm.newPromise();
    pending.add(deferred);
    const name = vm.typeof(nameHandle) === "string" ? vm.getString(nameHandle) : "";
    const argsJson = vm.typeof(argsHandle) === "string" ? vm.getString(argsHandle) : "{}";
    issued += 1;
    if (issued > limits.calls) end("calls", `the program issued more than ${limits.calls} sub-calls`);
    else if (Buffer.byteLength(argsJson) > limits.resultBytes)
      end("bytes", `a sub-call's arguments are over the ${limits.resultBytes}-byte bound`);
    else if (running.size >= limits.concurrency && waiting.length >= limits.waiting)
      end(
        "concurrency",
        `more than ${limits.concurrency} sub-calls running and ${limits.waiting} waiting for a slot`,
      );
    if (ended === undefined) {
      const args = parseJson(argsJson);
      const go = () => start(name, args, deferred);
      if (running.size < limits.concurrency) go();
      else waiting.push(go);
    }
    return deferred.handle;
  });

  const handles: QuickJSHandle[] = [call];
  let broken = false;
  try {
    const prelude = vm.evalCode(PRELUDE, "prelude.js");
    const preludeFn = vm.unwrapResult(prelude);
    handles.push(preludeFn);
    const toJson = vm.unwrapResult(vm.callFunction(preludeFn, vm.undefined, call));
    handles.push(toJson);

    const evaluated = vm.evalCode(`(async () => {\n${program}\n})()`, "program.js");
    if (evaluated.error) {
      const thrown = describe(vm, evaluated.error);
      evaluated.error.dispose();
      return ended ?? classify(thrown);
    }
    const promise = evaluated.value;
    handles.push(promise);

    for (;;) {
      const jobs = runtime.executePendingJobs();
      if (jobs.error) {
        const thrown = describe(vm, jobs.error);
        jobs.error.dispose();
        if (ended === undefined) {
          const outcome = classify(thrown);
          if (outcome.kind === "limit") end(outcome.limit, outcome.message);
        }
      }
      if (signal.aborted) return { kind: "cancelled" };
      if (ended !== undefined) return ended;
      const state = vm.getPromiseState(promise);
      if (state.type === "fulfilled") {
        const json = vm.callFunction(toJson, vm.undefined, state.value);
        state.value.dispose();
        if (json.error) {
          const thrown = describe(vm, json.error);
          json.error.dispose();
          const outcome = ended ?? classify(thrown);
          if (outcome.kind === "limit") return outcome;
          return { kind: "threw", message: `the return value is not JSON: ${thrown.message}` };
        }
        const text = vm.getString(json.value);
        json.value.dispose();
        const bytes = Buffer.byteLength(text);
        if (bytes > limits.returnBytes) {
          return {
            kind: "limit",
            limit: "bytes",
            message: `the return value of ${bytes} bytes is over the ${limits.returnBytes}-byte bound`,
          };
        }
        return { kind: "returned", json: text };
      }
      if (state.type === "rejected") {
        const thrown = describe(vm, state.error);
        state.error.dispose();
        return ended ?? classify(thrown);
      }
      if (running.size === 0 && waiting.length === 0 && !runtime.hasPendingJob())
        return { kind: "threw", message: "the program awaits something that can never settle" };
      const left = deadline - Date.now();
      if (left <= 0) {
        end("time", `the program ran past its ${limits.timeMs} ms`);
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = () => undefined;
    }
  } catch (error) {
    // The interpreter itself failed on the host (its wasm frames overflowed Node's stack, say):
    // this instance is dropped, the next program gets a fresh one.
    broken = true;
    loading = undefined;
    if (error instanceof RangeError)
      return { kind: "limit", limit: "memory", message: "the program ran out of stack" };
    return { kind: "threw", message: "the interpreter failed" };
  } finally {
    signal.removeEventListener("abort", onAbort);
    // Nothing may still be running once the program's end is reported: each sub-call settles
    // (cancelled, if it had not finished) and is journaled before this returns.
    aborter.abort();
    waiting.length = 0;
    await Promise.allSettled([...running]);
    for (const deferred of pending) deferred.dispose();
    for (const handle of handles) if (handle.alive) handle.dispose();
    try {
      if (!broken) {
        vm.dispose();
        runtime.dispose();
      }
    } catch {
      // A heap left inconsistent by an out-of-memory abort cannot be freed piecemeal; the
      // wasm module's memory is reused by the next runtime either way.
    }
  }
}

/** A thrown value inside the interpreter as plain text (never a host object). */
function describe(
  vm: QuickJSContext,
  handle: QuickJSHandle,
): { name: string; message: string; code?: string } {
  let dumped: unknown;
  try {
    dumped = vm.dump(handle);
  } catch {
    dumped = undefined;
  }
  if (typeof dumped === "object" && dumped !== null) {
    const record = dumped as Record<string, unknown>;
    const name = typeof record.name === "string" ? record.name : "Error";
    const message = typeof record.message === "string" ? record.message : String(dumped);
    const code = typeof record.code === "string" ? record.code : undefined;
    return { name, message: clip(message), ...(code ? { code } : {}) };
  }
  return { name: "Error", message: clip(String(dumped)) };
}

/** Out of memory or stack is the memory bound; an interrupt the handler already named. */
function classify(thrown: { name: string; message: string; code?: string }): ProgramEnd {
  if (thrown.name === "InternalError" && /out of memory|stack overflow/.test(thrown.message))
    return {
      kind: "limit",
      limit: "memory",
      message: `the program ran out of interpreter memory (${thrown.message})`,
    };
  if (thrown.message === "out of memory")
    return { kind: "limit", limit: "memory", message: "the program ran out of interpreter memory" };
  const code = thrown.code ? ` (${thrown.code})` : "";
  return { kind: "threw", message: `${thrown.name}${code}: ${thrown.message}` };
}

function clip(text: string): string {
  return text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS)}…` : text;
}

function parseJson(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return {};
  }
}
