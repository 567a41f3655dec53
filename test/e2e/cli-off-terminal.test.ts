import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  fixture,
  harness,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("off a terminal, ask means deny", () => {
  it("says so once at the start, and a run whose every change was denied is stopped, not unverified", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const result = await harness([
      "run",
      "--script",
      fixture("read-edit.mjs"),
      "--workspace",
      workspace,
      "finalise",
    ]);
    expect(result.code).toBe(2);
    const notes = result.stderr.match(/^harness: note: no terminal to ask on.*$/gm) ?? [];
    expect(notes).toEqual([
      "harness: note: no terminal to ask on, so 'ask' means deny; denied in this run: " +
        "file writes and edits (--write allow, or --write propose); shell commands (--shell allow, or --allow 'shell(CMD*)')",
    ]);
    // Said before anything ran.
    expect(result.stderr.indexOf("no terminal to ask on")).toBeLessThan(
      result.stderr.indexOf("model request"),
    );
    expect(result.stdout).toMatch(/^status +stopped \(changes_denied\)$/m);
    expect(result.stdout).toMatch(
      /^why +every change the model tried was denied \(1 call\(s\) of edit_file\); nothing was changed: allow them \(--write allow\) and run again$/m,
    );
    // The hint is a new run with the flag: the session keeps the policy it was recorded with.
    const next = result.stdout.match(/^next +(.*)$/gm)?.map((line) => line.replace(/^next +/, ""));
    const [id] = /^session +(\S+)$/m.exec(result.stdout)?.slice(1) ?? [];
    expect(next).toEqual([
      `harness run --script ${fixture("read-edit.mjs")} --write allow finalise --workspace ${workspace}`,
      `harness inspect ${id} --workspace ${workspace}`,
    ]);
    const records = await readJournal(workspace, id!);
    expect(ofType(records, "run.stopped").map((r) => r.data.reason)).toEqual(["changes_denied"]);
    expect(ofType(records, "run.finished")).toEqual([]);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: draft\n");
  });

  it("the hint's run does the change, and with --accept the acceptance commands decide as before", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const denied = await harness([
      "run",
      "--script",
      fixture("read-edit.mjs"),
      "--workspace",
      workspace,
      "--json",
      "finalise",
    ]);
    expect(denied.code).toBe(2);
    const summary = jsonSummary(denied);
    expect([summary.status, summary.reason]).toEqual(["stopped", "changes_denied"]);
    const [hint] = summary.next as string[];
    // Paste the hint (its words are plain: no quoting needed here).
    const again = await harness(hint!.split(" ").slice(1));
    expect(again.code).toBe(0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: final\n");

    const accepted = await workspaceWith({ "notes.txt": "status: draft\n" });
    const withAccept = await harness([
      "run",
      "--script",
      fixture("read-edit.mjs"),
      "--workspace",
      accepted,
      "--accept",
      "grep -q draft notes.txt",
      "--json",
      "finalise",
    ]);
    expect(withAccept.code).toBe(0);
    expect([jsonSummary(withAccept).status, jsonSummary(withAccept).reason]).toEqual(["verified", null]);
    const failing = await harness([
      "run",
      "--script",
      fixture("read-edit.mjs"),
      "--workspace",
      accepted,
      "--accept",
      "grep -q final notes.txt",
      "--json",
      "finalise",
    ]);
    expect(failing.code).toBe(2);
    expect(jsonSummary(failing).reason).toBe("acceptance_failed");
    expect(await readFile(join(accepted, "notes.txt"), "utf8")).toBe("status: draft\n");
  });

  it("a read-only run stays unverified, and a run with one allowed change is not stopped", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hello\n" });
    const readOnly = await harness([
      "run",
      "--script",
      fixture("read-then-answer.mjs"),
      "--workspace",
      workspace,
      "--json",
      "read the notes",
    ]);
    expect(readOnly.code).toBe(0);
    expect(jsonSummary(readOnly).status).toBe("unverified");
    const allowed = await harness([
      "run",
      "--script",
      fixture("read-edit.mjs"),
      "--workspace",
      await workspaceWith({ "notes.txt": "status: draft\n" }),
      "--write",
      "allow",
      "--json",
      "finalise",
    ]);
    expect(allowed.code).toBe(0);
    expect(jsonSummary(allowed).status).toBe("unverified");
    expect(allowed.stderr).toContain("denied in this run: shell commands");
    expect(allowed.stderr).not.toContain("file writes");
  });
});
