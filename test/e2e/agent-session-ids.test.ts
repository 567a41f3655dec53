import { cpSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileJournalStore } from "../../src/journal/file-store.js";
import type { AnyNewEvent } from "../../src/journal/vocabulary.js";
import {
  ensureBuilt,
  fixture,
  harness,
  journalFile,
  removeTempDirs,
  sessionIds,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const PARENT = "lead-20261207";
const CHILD = `${PARENT}/helper`;

/**
 * A workspace with a session the CLI recorded, and a sub-agent session below it written through
 * the store API (as the agent tool will): the parent's events again, with the child's id and goal,
 * and its artifacts.
 */
async function workspaceWithChild(): Promise<string> {
  const workspace = await workspaceWith({});
  const run = await harness([
    "run",
    "--script",
    fixture("echo-goal.mjs"),
    "--workspace",
    workspace,
    "--session",
    PARENT,
    "parent goal",
  ]);
  expect(run.code).toBe(0);
  const store = new FileJournalStore(join(workspace, ".harness"));
  const events = (await store.read(PARENT)).map(({ type, data }) =>
    type === "session.started"
      ? { type, data: { ...data, session_id: CHILD, goal: "child goal" } }
      : type === "user.input"
        ? { type, data: { ...data, text: "child goal" } }
        : { type, data },
  ) as AnyNewEvent[];
  const child = await store.openWriter(CHILD, { create: true });
  await child.append(events);
  await child.close();
  // The records name the parent's artifacts (its workspace manifest): the child keeps its own copy.
  const sessions = join(workspace, ".harness", "sessions");
  cpSync(join(sessions, PARENT, "artifacts"), join(sessions, PARENT, "helper", "artifacts"), {
    recursive: true,
  });
  return workspace;
}

describe("a sub-agent's session through the command line", () => {
  it("is inspected, reported and verified by its PARENT/LABEL id, or with a prefix of its parent", async () => {
    const workspace = await workspaceWithChild();
    expect(existsSync(join(workspace, ".harness", "sessions", PARENT, "helper", "events.jsonl"))).toBe(true);
    expect(journalFile(workspace, CHILD)).toBe(
      join(workspace, ".harness", "sessions", PARENT, "helper", "events.jsonl"),
    );

    const inspected = await harness(["inspect", CHILD, "--workspace", workspace]);
    expect(inspected.stderr).toBe("");
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toContain(`session ${CHILD} `);
    expect(inspected.stdout).toContain("user: child goal");
    expect(inspected.stdout).not.toContain("user: parent goal");
    const byPrefix = await harness(["inspect", "lead/helper", "--workspace", workspace]);
    expect(byPrefix.code).toBe(0);
    expect(byPrefix.stdout).toBe(inspected.stdout);

    const verified = await harness(["journal", "verify", CHILD, "--workspace", workspace]);
    expect(verified.stderr).toBe("");
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain(`journal ${CHILD}: intact`);
    const repaired = await harness(["journal", "repair", CHILD, "--workspace", workspace]);
    expect(repaired.code).toBe(0);
    expect(repaired.stdout).toContain(`journal ${CHILD}: intact, nothing to repair`);
    const unlocked = await harness(["unlock", CHILD, "--workspace", workspace]);
    expect(unlocked.code).toBe(0);
    expect(unlocked.stdout).toContain(`session ${CHILD}: not locked`);
    // The parent's folder now holds the child's: the parent still verifies as it did.
    const parent = await harness(["journal", "verify", PARENT, "--workspace", workspace]);
    expect(parent.code).toBe(0);
    expect(parent.stdout).toContain(`journal ${PARENT}: intact`);

    const page = join(workspace, "child.html");
    const reported = await harness(["report", CHILD, "--workspace", workspace, "-o", page]);
    expect(reported.code).toBe(0);
    expect(readFileSync(page, "utf8")).toContain("child goal");

    // The workspace's sessions are its root sessions; the child lives inside its parent's folder.
    const listed = await harness(["sessions", "--workspace", workspace, "--json"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(PARENT);
    expect(listed.stdout).not.toContain(CHILD);
    expect(sessionIds(workspace)).toEqual([PARENT]);
  });

  it("refuses hostile and unknown child ids as usage errors, touching nothing", async () => {
    const workspace = await workspaceWithChild();
    for (const id of [
      `${PARENT}/../x`,
      `${PARENT}//helper`,
      `${PARENT}/.helper`,
      `/${PARENT}`,
      `${PARENT}/`,
    ]) {
      const result = await harness(["inspect", id, "--workspace", workspace]);
      expect(result.code).toBe(64);
      expect(result.stderr).toContain("invalid session id");
    }
    const unknown = await harness(["inspect", `${PARENT}/nobody`, "--workspace", workspace]);
    expect(unknown.code).toBe(64);
    expect(unknown.stderr).toContain(`no session "${PARENT}/nobody"`);
    const unknownParent = await harness(["journal", "verify", "zzz/helper", "--workspace", workspace]);
    expect(unknownParent.code).toBe(64);
    // A new session is a root session: a person does not start a sub-agent's session by name.
    const named = await harness([
      "run",
      "--script",
      fixture("echo-goal.mjs"),
      "--workspace",
      workspace,
      "--session",
      `${PARENT}/other`,
      "goal",
    ]);
    expect(named.code).toBe(64);
    expect(existsSync(join(workspace, ".harness", "sessions", PARENT, "other"))).toBe(false);
    expect(sessionIds(workspace)).toEqual([PARENT]);
  });
});
