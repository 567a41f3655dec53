import { describe, expect, it } from "vitest";
import type { JsonValue } from "../../../src/shared/json.js";
import {
  DEFAULT_PROGRAM_LIMITS,
  type HostCall,
  type ProgramLimits,
  runProgram,
} from "../../../src/tools/batch/interpreter.js";

const never = new AbortController().signal;

/** A host whose every call echoes its arguments after `delayMs`, counting calls. */
function echoHost(delayMs = 0) {
  const seen: { name: string; args: JsonValue }[] = [];
  let running = 0;
  let peak = 0;
  const host: HostCall = async (name, args, signal) => {
    seen.push({ name, args });
    running += 1;
    peak = Math.max(peak, running);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    running -= 1;
    if (signal.aborted) return { ok: false, error: { code: "CANCELLED", message: "cancelled" } };
    if (name === "fail")
      return { ok: false, error: { code: "TIMEOUT", message: "too slow", call_id: "c/1" } };
    return { ok: true, value: { name, args } };
  };
  return { host, seen, peak: () => peak };
}

function run(program: string, host: HostCall = echoHost().host, limits: Partial<ProgramLimits> = {}) {
  return runProgram(program, host, { ...DEFAULT_PROGRAM_LIMITS, ...limits }, never);
}

describe("runProgram", () => {
  it("returns the program's value as JSON, with awaited sub-calls", async () => {
    const end = await run(`const a = await tools.read_file({path: "a"}); return {got: a.args.path, n: 2};`);
    expect(end).toEqual({ kind: "returned", json: JSON.stringify({ got: "a", n: 2 }) });
  });

  it("gives a failed sub-call to the program as a thrown error with its code, which it may catch", async () => {
    const end = await run(
      `try { await tools.fail({}); return "no"; } catch (e) { return [e.code, e.message, e.call_id, e instanceof Error]; }`,
    );
    expect(end).toEqual({ kind: "returned", json: JSON.stringify(["TIMEOUT", "too slow", "c/1", true]) });
  });

  it("has no ambient authority: no process, require, fetch, clock, or host objects", async () => {
    const end = await run(`return {
      process: typeof process, require: typeof require, fetch: typeof fetch, Date: typeof Date,
      setTimeout: typeof setTimeout, Buffer: typeof Buffer, WebAssembly: typeof WebAssembly,
      globals: Object.getOwnPropertyNames(globalThis).filter((n) => !/^[A-Z]/.test(n)).sort(),
      evalProcess: eval("typeof process"), fnGlobal: Function("return typeof globalThis.process")(),
      ctorEscape: (() => { try { return typeof tools.x.constructor.constructor("return process")(); } catch (e) { return "threw " + e.name; } })(),
    };`);
    expect(end.kind).toBe("returned");
    const value = JSON.parse((end as { json: string }).json);
    expect(value).toMatchObject({
      process: "undefined",
      require: "undefined",
      fetch: "undefined",
      Date: "undefined",
      setTimeout: "undefined",
      Buffer: "undefined",
      WebAssembly: "undefined",
      evalProcess: "undefined",
      fnGlobal: "undefined",
      ctorEscape: "threw ReferenceError",
    });
    expect(value.globals).toEqual(
      [
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "eval",
        "globalThis",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "tools",
        "undefined",
        "unescape",
      ].sort(),
    );
  });

  it("refuses import(): there is no module loader", async () => {
    const end = await run(`const fs = await import("node:fs"); return typeof fs.readFileSync;`);
    expect(end.kind).toBe("threw");
  });

  it("ends an endless loop at the instruction bound", async () => {
    const end = await run(`for (;;) {}`, undefined, { instructions: 200 });
    expect(end).toMatchObject({ kind: "limit", limit: "instructions" });
  });

  it("ends a loop that catches its interruption all the same", async () => {
    const end = await run(`for (;;) { try { for (;;) {} } catch (e) {} }`, undefined, { instructions: 200 });
    expect(end).toMatchObject({ kind: "limit", limit: "instructions" });
  });

  it("ends a memory bomb at the memory bound", async () => {
    const end = await run(`const a = []; for (;;) a.push({ i: a.length, s: "x" + a.length });`, undefined, {
      memoryBytes: 8 * 1024 * 1024,
    });
    expect(end).toMatchObject({ kind: "limit", limit: "memory" });
  });

  it("ends a string bomb, slow near the memory cap, at the memory or the time bound", async () => {
    const started = Date.now();
    const end = await run(`const a = []; for (;;) a.push("x".repeat(4096) + a.length);`, undefined, {
      memoryBytes: 2 * 1024 * 1024,
      timeMs: 1_500,
    });
    expect(end).toMatchObject({ kind: "limit" });
    expect(["memory", "time"]).toContain((end as { limit: string }).limit);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("ends deep recursion at the memory bound (stack)", async () => {
    const end = await run(`const f = (n) => f(n + 1) + 1; return f(0);`);
    expect(end).toMatchObject({ kind: "limit", limit: "memory" });
  });

  it("ends a program that waits past its wall time", async () => {
    const { host } = echoHost(2_000);
    const started = Date.now();
    const end = await run(`await tools.read_file({}); return 1;`, host, { timeMs: 200 });
    expect(end).toMatchObject({ kind: "limit", limit: "time" });
    expect(Date.now() - started).toBeLessThan(2_000 + 1_000);
  });

  it("ends a program issuing more sub-calls than allowed, and runs none past the bound", async () => {
    const { host, seen } = echoHost();
    const end = await run(
      `const all = []; for (let i = 0; i < 10000; i++) all.push(tools.read_file({path: "f" + i})); await Promise.all(all); return 1;`,
      host,
    );
    expect(end).toMatchObject({ kind: "limit", limit: "calls" });
    expect(seen.length).toBeLessThanOrEqual(DEFAULT_PROGRAM_LIMITS.calls);
  });

  it("runs at most `concurrency` sub-calls at once; more wait; too many waiting ends it", async () => {
    const echo = echoHost(20);
    const ok = await run(
      `return (await Promise.all(Array.from({length: 12}, (_, i) => tools.read_file({path: "m" + i})))).length;`,
      echo.host,
      { concurrency: 4 },
    );
    expect(ok).toEqual({ kind: "returned", json: "12" });
    expect(echo.peak()).toBe(4);
    const over = await run(
      `await Promise.all(Array.from({length: 12}, (_, i) => tools.read_file({path: "m" + i})));`,
      echoHost(20).host,
      { concurrency: 4, waiting: 4 },
    );
    expect(over).toMatchObject({ kind: "limit", limit: "concurrency" });
  });

  it("bounds one sub-result, all of them, and the return value", async () => {
    const big: HostCall = async () => ({ ok: true, value: "y".repeat(2_000) });
    expect(await run(`return (await tools.a({})).length;`, big, { resultBytes: 1_000 })).toMatchObject({
      kind: "limit",
      limit: "bytes",
    });
    expect(
      await run(`for (let i = 0; i < 10; i++) await tools.a({}); return 1;`, big, { totalBytes: 10_000 }),
    ).toMatchObject({ kind: "limit", limit: "bytes" });
    expect(await run(`return "z".repeat(5000);`, undefined, { returnBytes: 4_000 })).toMatchObject({
      kind: "limit",
      limit: "bytes",
    });
  });

  it("reports what a program threw, and a return value that is not JSON", async () => {
    expect(await run(`throw new TypeError("nope");`)).toEqual({ kind: "threw", message: "TypeError: nope" });
    expect((await run(`return 1n;`)).kind).toBe("threw");
    expect((await run(`return (`)).kind).toBe("threw");
    expect(await run(`await new Promise(() => {});`)).toMatchObject({ kind: "threw" });
  });

  it("cannot reach the host through a replaced JSON or tools", async () => {
    const end = await run(
      `JSON.parse = () => ({ok: true, value: "forged"}); let r = "kept"; try { globalThis.tools = 1; } catch (e) { r = e.name; } return [typeof tools, (await tools.read_file({path: "p"})).args.path];`,
    );
    expect(end).toEqual({ kind: "returned", json: JSON.stringify(["object", "p"]) });
  });
});
