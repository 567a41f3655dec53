import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FunctionApprover } from "../../src/policy/approver.js";
import { count, engineFor, helloAccepted, run, tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "helo, harness\n" });
});
afterEach(async () => ws.cleanup());

/** The model creates new.txt, then answers. */
const writeThenAnswer = (_m: unknown, step: number) =>
  step === 0
    ? { calls: [{ id: "w", name: "write_file", arguments: { path: "new.txt", content: "made\n" } }] }
    : { text: "made it" };

const readThenAnswer = (_m: unknown, step: number) =>
  step === 0
    ? { calls: [{ id: "r", name: "read_file", arguments: { path: "hello.txt" } }] }
    : { text: "read it" };

describe("a run whose every attempted change was denied", () => {
  it("stops with changes_denied, naming the tool and the flag, and writes nothing", async () => {
    const summary = await run(ws, {
      script: writeThenAnswer,
      write: "deny",
      extra: { changesDeniedStops: true },
    });
    expect(summary.status).toBe("stopped");
    expect(summary.reason).toBe("changes_denied");
    expect(summary.message).toBe(
      "every change the model tried was denied (1 call(s) of write_file); " +
        "nothing was changed: allow them (--write allow) and run again",
    );
    // The flags are a field of their own, in the summary and in the journal: nobody parses the message.
    expect(summary.allow).toEqual([["--write", "allow"]]);
    expect((await ws.events("run.stopped")).map((r) => r.data)).toEqual([
      {
        status: "stopped",
        reason: "changes_denied",
        message: summary.message,
        allow: [["--write", "allow"]],
      },
    ]);
    expect(count(await ws.journal(), "run.finished")).toBe(0);
    expect(existsSync(join(ws.root, "new.txt"))).toBe(false);
  });

  it("ends unverified as before when the rule is off (an embedder such as harness mcp serve decides)", async () => {
    const summary = await run(ws, { script: writeThenAnswer, write: "deny" });
    expect([summary.status, summary.reason]).toEqual(["unverified", null]);
  });

  it("acceptance checks decide when there are some: a denied change fails them, it is not changes_denied", async () => {
    const summary = await run(ws, {
      script: writeThenAnswer,
      write: "deny",
      acceptance: [helloAccepted(ws)],
      extra: { changesDeniedStops: true },
    });
    expect([summary.status, summary.reason]).toEqual(["stopped", "acceptance_failed"]);
  });

  it("a run that only read, or whose change went through, is not stopped", async () => {
    const readOnly = await run(ws, {
      script: readThenAnswer,
      write: "deny",
      extra: { changesDeniedStops: true },
    });
    expect([readOnly.status, readOnly.reason]).toEqual(["unverified", null]);
    const allowed = await run(ws, {
      script: writeThenAnswer,
      write: "allow",
      session: "t",
      extra: { changesDeniedStops: true },
    });
    expect([allowed.status, allowed.reason]).toEqual(["unverified", null]);
    expect(await ws.file("new.txt")).toBe("made\n");
  });

  it("other stops carry no flags", async () => {
    const summary = await run(ws, { script: writeThenAnswer, write: "allow", limits: { maxToolCalls: 0 } });
    expect(summary.reason).toBe("budget_exhausted");
    expect(summary.allow).toBeUndefined();
    expect((await ws.events("run.stopped"))[0]?.data).not.toHaveProperty("allow");
  });
});

describe("changes denied, turn by turn", () => {
  /** Each turn the model writes a file named after its turn, then answers. */
  const writePerTurn = (messages: readonly { role: string; content?: unknown }[]) => {
    const last = messages.at(-1);
    if (last?.role === "tool") return { text: "done" };
    const turn = messages.filter((m) => m.role === "user").length;
    return {
      calls: [{ id: `w${turn}`, name: "write_file", arguments: { path: `t${turn}.txt`, content: "x\n" } }],
    };
  };
  const readPerTurn = (messages: readonly { role: string; content?: unknown }[]) => {
    const last = messages.at(-1);
    if (last?.role === "tool") return { text: "read" };
    const turn = messages.filter((m) => m.role === "user").length;
    return { calls: [{ id: `r${turn}`, name: "read_file", arguments: { path: "hello.txt" } }] };
  };

  it("a turn whose writes were all denied stops, though an earlier turn's write went through", async () => {
    let answers = ["allow", "deny"];
    const approver = new FunctionApprover(() => {
      const [answer = "deny", ...rest] = answers;
      answers = rest;
      return answer;
    });
    const options = {
      script: writePerTurn,
      write: "ask" as const,
      approver,
      extra: { changesDeniedStops: true },
    };
    const first = await run(ws, options);
    expect([first.status, first.reason]).toEqual(["unverified", null]);
    const second = await engineFor(ws, {
      ...options,
      extra: { ...options.extra, input: "one more file" },
    }).run();
    expect([second.status, second.reason]).toEqual(["stopped", "changes_denied"]);
    expect(second.message).toContain("(1 call(s) of write_file)");
    expect(await ws.file("t1.txt")).toBe("x\n");
    expect(existsSync(join(ws.root, "t2.txt"))).toBe(false);
  });

  it("a turn that only reads ends as usual, though an earlier turn's changes were all denied", async () => {
    const denied = await run(ws, {
      script: writePerTurn,
      write: "deny",
      extra: { changesDeniedStops: true },
    });
    expect(denied.reason).toBe("changes_denied");
    const next = await engineFor(ws, {
      script: readPerTurn,
      write: "deny",
      extra: { changesDeniedStops: true, input: "just read hello.txt" },
    }).run();
    expect([next.status, next.reason]).toEqual(["unverified", null]);
  });
});
