import { readFile, truncate } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  harness,
  journalFile,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("harness review", () => {
  it("lists unknown outcomes, records a resolution with evidence, and lets resume continue", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      { calls: [{ id: "w-1", name: "write_file", arguments: { path: "out.txt", content: "done\n" } }] },
      { text: "out.txt written" },
    ]);
    const common = ["--script", script, "--workspace", workspace, "--write", "allow"];
    expectExit(
      await harness(["run", ...common, "--session", "r", "--accept", "test -f out.txt", "write out.txt"]),
      0,
    );
    // Simulate a crash after the write started: cut the journal right after tool.started.
    const path = journalFile(workspace, "r");
    const lines = (await readFile(path, "utf8")).split("\n");
    const at = lines.findIndex((l) => l.includes('"tool.started"'));
    await truncate(path, Buffer.byteLength(`${lines.slice(0, at + 1).join("\n")}\n`));

    expectExit(await harness(["resume", "r", ...common]), 3);
    const listed = await harness(["review", "r", "--workspace", workspace]);
    expectExit(listed, 0);
    expect(listed.stdout).toContain("w-1");

    const missingEvidence = await harness(["review", "r", "w-1", "--applied", "--workspace", workspace]);
    expectExit(missingEvidence, 64);
    const before = (await readJournal(workspace, "r")).length;
    expect(before).toBeGreaterThan(0);

    const resolved = await harness([
      "review",
      "r",
      "w-1",
      "--applied",
      "--evidence",
      "out.txt exists with the expected bytes",
      "--by",
      "ops",
      "--workspace",
      workspace,
    ]);
    expectExit(resolved, 0);
    // The resume it names says where, and that the scripted model's file must be given again.
    expect(resolved.stdout).toContain(
      `no unknown outcomes remain: continue with harness resume r --script FILE --workspace ${workspace}\n`,
    );
    const records = await readJournal(workspace, "r");
    expect(ofType(records, "review.resolved").map((r) => r.data)).toEqual([
      {
        call_id: "w-1",
        resolution: "applied",
        evidence: "out.txt exists with the expected bytes",
        by: "ops",
      },
    ]);

    // A conclusive resolution stands (a resumed run may act on it): another answer is refused.
    const again = await harness([
      "review",
      "r",
      "w-1",
      "--not-applied",
      "--evidence",
      "changed my mind",
      "--workspace",
      workspace,
    ]);
    expectExit(again, 64);
    expect(again.stderr).toContain('call "w-1" of session r was already resolved as applied by ops');
    expect(ofType(await readJournal(workspace, "r"), "review.resolved")).toHaveLength(1);

    const resumed = await harness(["resume", "r", ...common, "--json"]);
    expectExit(resumed, 0);
    expect(jsonSummary(resumed)).toMatchObject({ status: "verified", tool_calls: 1 });
    expect(ofType(await readJournal(workspace, "r"), "tool.started")).toHaveLength(1);
  });
});
