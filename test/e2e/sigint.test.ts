import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  jsonSummary,
  lockFile,
  ofType,
  onStdoutLine,
  readJournal,
  removeTempDirs,
  startHarness,
  workspaceWith,
} from "./helpers.js";

const SESSION = "interrupted";
const ACCEPT = "printf 'done\\n' | cmp -s - out.txt";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("SIGINT", () => {
  it("while waiting to retry the model: exit 130, run.cancelled journaled, and resume finishes the session", async () => {
    const workspace = await workspaceWith({});
    // Three transient failures make the engine back off between attempts; the fourth attempt
    // succeeds. The interrupt lands during the first back-off.
    const script = await jsonScript([
      { error: { kind: "transient", message: "overloaded" } },
      { error: { kind: "transient", message: "overloaded" } },
      { error: { kind: "transient", message: "overloaded" } },
      {
        text: "writing",
        calls: [{ id: "w-1", name: "write_file", arguments: { path: "out.txt", content: "done\n" } }],
      },
      { text: "out.txt is written" },
    ]);
    const args = ["--script", script, "--workspace", workspace, "--write", "allow", "--accept", ACCEPT];

    const child = startHarness(["run", ...args, "--session", SESSION, "--events", "write out.txt"]);
    onStdoutLine(child, (line) => {
      if ((JSON.parse(line) as { type: string }).type === "model.retryable_error") child.kill("SIGINT");
    });
    const interrupted = await finished(child);
    expectExit(interrupted, 130);
    expect(interrupted.stderr).toContain("SIGINT received");

    const records = await readJournal(workspace, SESSION);
    expect(records.at(-1)!.type).toBe("run.cancelled");
    expect(ofType(records, "model.reply")).toHaveLength(0);
    expect(ofType(records, "model.retryable_error").length).toBeGreaterThanOrEqual(1);
    expect(existsSync(join(workspace, "out.txt"))).toBe(false);
    expect(existsSync(lockFile(workspace, SESSION))).toBe(false);
    const verified = await harness(["journal", "verify", SESSION, "--workspace", workspace]);
    expectExit(verified, 0);
    expect(verified.stdout).toContain("intact");

    const sessions = await harness(["sessions", "--workspace", workspace, "--json"]);
    expect(JSON.parse(sessions.stdout)).toEqual([
      expect.objectContaining({ session: SESSION, status: "cancelled" }),
    ]);

    const resumed = await harness([
      "resume",
      SESSION,
      "--script",
      script,
      "--workspace",
      workspace,
      "--json",
    ]);
    expectExit(resumed, 0);
    expect(jsonSummary(resumed)).toMatchObject({
      status: "verified",
      tool_calls: 1,
      answer: "out.txt is written",
    });
    expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe("done\n");
    const after = await readJournal(workspace, SESSION);
    expect(after.slice(0, records.length)).toEqual(records);
    // Every attempt counts across the interruption: three failures and two replies, plus an attempt
    // the interrupt cut short if it landed after a back-off had already ended.
    const cutShort =
      ofType(records, "model.started").length - ofType(records, "model.retryable_error").length;
    expect(ofType(after, "model.started")).toHaveLength(5 + cutShort);
    expect(ofType(after, "model.reply")).toHaveLength(2);
    expect(ofType(after, "model.retryable_error")).toHaveLength(3);
    expect(ofType(after, "tool.started")).toHaveLength(1);
  });
});
