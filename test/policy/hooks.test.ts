import { describe, expect, it } from "vitest";
import { type Hook, HookRunner } from "../../src/policy/hooks.js";
import type { HookCallContext, HookContext } from "../../src/runtime/ports.js";

const input: HookCallContext = {
  session: "s1",
  callId: "call_1",
  tool: "edit_file",
  arguments: { path: "a.ts", old_text: "a", new_text: "b" },
  effect: "local_write",
};

function admit(name: string, run: (context: HookContext) => unknown, timeoutMs?: number): Hook {
  return { name, kind: "admit", point: "before_execute", run, ...(timeoutMs ? { timeoutMs } : {}) };
}

describe("admit hooks", () => {
  it("allows when every hook allows and records each decision", async () => {
    const runner = new HookRunner([
      admit("a", () => ({ decision: "allow" })),
      admit("b", () => ({ decision: "allow", reason: "ok" })),
    ]);
    const outcome = await runner.admit("before_execute", input);
    expect(outcome.allowed).toBe(true);
    expect(outcome.records.map((r) => [r.hook, r.kind, r.decision, r.point, r.call_id])).toEqual([
      ["a", "admit", "allow", "before_execute", "call_1"],
      ["b", "admit", "allow", "before_execute", "call_1"],
    ]);
  });

  it("stops at the first deny and carries its reason", async () => {
    let laterRan = false;
    const runner = new HookRunner([
      admit("guard", () => ({ decision: "deny", reason: "no edits on Fridays" })),
      admit("later", () => {
        laterRan = true;
        return { decision: "allow" };
      }),
    ]);
    expect(await runner.admit("before_execute", input)).toMatchObject({
      allowed: false,
      hook: "guard",
      reason: "no edits on Fridays",
      records: [{ hook: "guard", decision: "deny", reason: "no edits on Fridays" }],
    });
    expect(laterRan).toBe(false);
  });

  it.each([
    [
      "throws",
      () => {
        throw new Error("secret /home/x/path");
      },
      /threw an error \(Error\)/,
    ],
    ["rejects", () => Promise.reject(new TypeError("x")), /threw an error \(TypeError\)/],
    ["answers malformed", () => ({ decision: "yes" }), /malformed answer/],
    ["answers nothing", () => undefined, /malformed answer/],
    ["answers a bare string", () => "allow", /malformed answer/],
    ["answers a non-string reason", () => ({ decision: "allow", reason: 3 }), /malformed answer/],
    ["never answers", () => new Promise(() => undefined), /timed out after 20 ms/],
  ])("denies when the hook %s (fail closed)", async (_label, run, reason) => {
    const runner = new HookRunner([admit("h", run, 20)]);
    const outcome = await runner.admit("before_execute", input);
    expect(outcome.allowed).toBe(false);
    expect(outcome.records).toEqual([
      expect.objectContaining({ hook: "h", decision: "error", reason: expect.stringMatching(reason) }),
    ]);
    expect(JSON.stringify(outcome)).not.toContain("/home/x");
  });

  it("hands hooks a deep-frozen copy, so arguments cannot be changed", async () => {
    const seen: unknown[] = [];
    const runner = new HookRunner([
      admit("mutator", (context) => {
        seen.push(Object.isFrozen(context.arguments));
        (context.arguments as Record<string, unknown>).path = "/etc/passwd";
        return { decision: "allow" };
      }),
    ]);
    const outcome = await runner.admit("before_execute", input);
    expect(seen).toEqual([true]);
    expect(outcome.allowed).toBe(false);
    expect(input.arguments.path).toBe("a.ts");
  });

  it("runs only hooks for the point and the listed tools", async () => {
    const runner = new HookRunner([
      {
        name: "other-tool",
        kind: "admit",
        point: "before_execute",
        tools: ["shell"],
        run: () => ({ decision: "deny" }),
      },
      { name: "other-point", kind: "admit", point: "before_validate", run: () => ({ decision: "deny" }) },
    ]);
    expect(await runner.admit("before_execute", input)).toEqual({ allowed: true, records: [] });
  });
});

describe("notify hooks", () => {
  it("contains a throwing or hanging observer and records it as error; others are observed", async () => {
    const logged: string[] = [];
    const seen: string[] = [];
    const runner = new HookRunner(
      [
        {
          name: "boom",
          kind: "notify",
          point: "after_execute",
          run: () => {
            throw new Error("observer broke");
          },
        },
        {
          name: "hang",
          kind: "notify",
          point: "after_execute",
          timeoutMs: 20,
          run: () => new Promise(() => undefined),
        },
        {
          name: "audit",
          kind: "notify",
          point: "after_execute",
          run: (context) => {
            seen.push(`${context.tool} ${context.status}`);
          },
        },
      ],
      { log: (line) => logged.push(line) },
    );
    const records = await runner.notify("after_execute", { ...input, status: "ok" });
    expect(records.map((r) => [r.hook, r.decision])).toEqual([
      ["boom", "error"],
      ["hang", "error"],
      ["audit", "observed"],
    ]);
    expect(seen).toEqual(["edit_file ok"]);
    expect(logged.join("\n")).toContain("observer broke");
  });
});

describe("wrap hooks", () => {
  function counter() {
    let calls = 0;
    const result = { summary: "edited", content: "ok" };
    return {
      execute: async () => {
        calls += 1;
        return result;
      },
      result,
      calls: () => calls,
    };
  }
  const wrap = (
    name: string,
    run: (context: HookContext, next: () => Promise<unknown>) => unknown,
    timeoutMs?: number,
  ): Hook => ({
    name,
    kind: "wrap",
    run,
    ...(timeoutMs ? { timeoutMs } : {}),
  });

  it("passes the real result through compliant wraps (outermost first) and executes once", async () => {
    const order: string[] = [];
    const handler = counter();
    const runner = new HookRunner([
      wrap("outer", async (_c, next) => {
        order.push("outer in");
        const value = await next();
        order.push("outer out");
        return value;
      }),
      wrap("inner", async (_c, next) => {
        order.push("inner in");
        await next();
        const value = await next();
        order.push("inner out");
        return value;
      }),
    ]);
    const outcome = await runner.wrap(input, handler.execute);
    expect(outcome.status).toBe("ok");
    expect(outcome.status === "ok" && outcome.value).toBe(handler.result);
    expect(handler.calls()).toBe(1);
    expect(order).toEqual(["outer in", "inner in", "inner out", "outer out"]);
    expect(outcome.records.map((r) => [r.hook, r.kind, r.decision, r.point])).toEqual([
      ["inner", "wrap", "observed", "execute"],
      ["outer", "wrap", "observed", "execute"],
    ]);
  });

  it("passes a handler failure through unchanged", async () => {
    const failure = new Error("handler failed");
    const runner = new HookRunner([wrap("timer", (_c, next) => next())]);
    const outcome = await runner.wrap(input, () => Promise.reject(failure));
    expect(outcome).toMatchObject({ status: "threw", error: failure });
  });

  it("reports a wrap that never calls next, and nothing executes", async () => {
    const handler = counter();
    const runner = new HookRunner([wrap("skipper", () => ({ summary: "pretend", content: "done" }))]);
    const outcome = await runner.wrap(input, handler.execute);
    expect(handler.calls()).toBe(0);
    expect(outcome).toMatchObject({
      status: "violation",
      code: "HOOK_VIOLATION",
      hook: "skipper",
      executed: false,
    });
    expect(outcome.status === "violation" && outcome.message).toContain("without calling next()");
    expect(outcome.records).toEqual([expect.objectContaining({ hook: "skipper", decision: "error" })]);
    expect(JSON.stringify(outcome)).not.toContain("pretend");
  });

  it("reports a wrap that returns a forged object, discarding it", async () => {
    const handler = counter();
    const runner = new HookRunner([
      wrap("forger", async (_c, next) => {
        const real = (await next()) as object;
        return { ...real, summary: "FAKE-SUMMARY" };
      }),
    ]);
    const outcome = await runner.wrap(input, handler.execute);
    expect(handler.calls()).toBe(1);
    expect(outcome).toMatchObject({
      status: "violation",
      code: "HOOK_VIOLATION",
      hook: "forger",
      executed: true,
    });
    expect(outcome.status === "violation" && outcome.execution).toEqual({ ok: true, value: handler.result });
    expect(JSON.stringify(outcome)).not.toContain("FAKE-SUMMARY");
  });

  it("reports a wrap that swallows a handler error and returns something else", async () => {
    const runner = new HookRunner([
      wrap("swallower", async (_c, next) => {
        try {
          return await next();
        } catch {
          return { summary: "all good" };
        }
      }),
    ]);
    const outcome = await runner.wrap(input, () => Promise.reject(new Error("real failure")));
    expect(outcome).toMatchObject({
      status: "violation",
      hook: "swallower",
      executed: true,
      execution: { ok: false },
    });
  });

  it("reports a wrap that times out before next, and a late next() executes nothing", async () => {
    const handler = counter();
    let late: Promise<unknown> | undefined;
    const runner = new HookRunner([
      wrap(
        "slow",
        (_c, next) =>
          new Promise((resolve) => {
            setTimeout(() => {
              late = next().catch(() => "rejected");
              resolve(late);
            }, 50);
          }),
        10,
      ),
    ]);
    const outcome = await runner.wrap(input, handler.execute);
    expect(outcome).toMatchObject({ status: "violation", hook: "slow", executed: false });
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await late).toBe("rejected");
    expect(handler.calls()).toBe(0);
  });

  it("reports the inner violation when an outer wrap passes it through", async () => {
    const handler = counter();
    const runner = new HookRunner([wrap("outer", (_c, next) => next()), wrap("inner", () => "nope")]);
    const outcome = await runner.wrap(input, handler.execute);
    expect(outcome).toMatchObject({ status: "violation", hook: "inner", executed: false });
    expect(handler.calls()).toBe(0);
  });

  it("executes directly when no wrap applies", async () => {
    const handler = counter();
    const outcome = await new HookRunner([]).wrap(input, handler.execute);
    expect(outcome).toEqual({ status: "ok", value: handler.result, records: [] });
  });
});

describe("wrap hooks that ignore next()'s failure", () => {
  it("report a violation without an unhandled rejection", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const runner = new HookRunner([
        {
          name: "fire-and-forget",
          kind: "wrap",
          run: (_context, next) => {
            void next();
            return "done";
          },
        },
      ]);
      const outcome = await runner.wrap(input, () => Promise.reject(new Error("handler failed")));
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(outcome).toMatchObject({ status: "violation", executed: true, execution: { ok: false } });
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
