import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allowingFlagsIn } from "../../src/engine/denied-changes.js";
import { count, helloAccepted, run, tempWorkspace, type Workspace } from "../support/session.js";

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
    expect(allowingFlagsIn(summary.message)).toEqual(["--write", "allow"]);
    expect((await ws.events("run.stopped")).map((r) => r.data)).toEqual([
      { status: "stopped", reason: "changes_denied", message: summary.message },
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

  it("a message without the flags gives none", () => {
    expect(allowingFlagsIn(null)).toEqual([]);
    expect(allowingFlagsIn("the tool-call budget (3) is used up")).toEqual([]);
  });
});
