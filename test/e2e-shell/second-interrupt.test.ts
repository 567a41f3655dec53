import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  finished,
  harness,
  jsonScript,
  lockFile,
  ofType,
  onStdoutLine,
  readJournal,
  removeTempDirs,
  workspaceWith,
} from "../e2e/helpers.js";
import { processesWith } from "../support/processes.js";
import { startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTempDirs());

describe("a second Ctrl-C", () => {
  it("exits at once while the first is still stopping a command, and the journal stays consistent", async () => {
    const workspace = await workspaceWith({});
    // The command ignores SIGTERM, so the first interrupt has to wait out the kill grace period.
    const script = await jsonScript([
      {
        calls: [{ id: "s1", name: "shell", arguments: { command: "trap '' TERM; sleep 30.31; echo late" } }],
      },
      { text: "done" },
    ]);
    const child = startHarnessWith([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--shell",
      "allow",
      "--sandbox",
      "off",
      "--session",
      "twice",
      "--events",
      "interrupt me twice",
    ]);
    onStdoutLine(child, (line) => {
      if ((JSON.parse(line) as { type: string }).type === "process.spawned") {
        setTimeout(() => {
          child.kill("SIGINT");
          setTimeout(() => child.kill("SIGINT"), 200);
        }, 200);
      }
    });
    const result = await finished(child);
    expect(result.code).toBe(130);
    expect(result.stderr).toContain("second interrupt");

    const verify = await harness(["journal", "verify", "twice", "--workspace", workspace]);
    expect(verify.code).toBe(0);
    const records = await readJournal(workspace, "twice");
    expect(ofType(records, "tool.started")).toHaveLength(1);
    expect(ofType(records, "process.spawned")).toHaveLength(1);

    // The lock was released and the command's process group killed on the way out.
    expect(existsSync(lockFile(workspace, "twice"))).toBe(false);
    expect(processesWith("30.31")).toEqual([]);
    // The call has no outcome: a resume reports it as unknown and never runs it again.
    const resumed = await harness([
      "resume",
      "twice",
      "--script",
      script,
      "--workspace",
      workspace,
      "--json",
    ]);
    expect(resumed.code).toBe(3);
    const after = await readJournal(workspace, "twice");
    expect(ofType(after, "tool.started")).toHaveLength(1);
    const [result1] = ofType(after, "tool.result");
    expect(result1?.data).toMatchObject({ call_id: "s1", status: "unknown" });
  });
});

/** Live (non-zombie) processes whose command line contains `token`. */
