import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processesWith } from "../support/processes.js";
import { until } from "../support/until.js";
import {
  childEnv,
  ensureBuilt,
  finished,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { StdioServer, serverConfig, serverEnv } from "./serve-support.js";

/*
 * Children that would outlive their parent: three sub-agents each running a long command when the
 * person presses Ctrl-C (SIGINT) or harness is told to stop (SIGTERM). Every descendant is
 * cancelled, its process tree killed, and each child's end journaled in the parent.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** The live `sleep TOKEN` processes (a sandbox's own command line holds "sleep TOKEN" with a space). */
const liveWith = (token: string): number[] => processesWith(`sleep\u0000${token}`);

/** A parent that starts three children, each running `sleep TOKEN`. */
async function sleepersScript(token: string, labels: readonly string[]): Promise<string> {
  const sleeper = {
    replies: [
      { text: "", calls: [{ id: "s", name: "shell", arguments: { command: `sleep ${token}` } }] },
      { text: "x" },
    ],
  };
  const file = join(await tempDir("harness-agents-script-"), "script.json");
  await writeFile(
    file,
    JSON.stringify({
      replies: [
        {
          text: "",
          calls: labels.map((label, i) => ({
            id: `a${i}`,
            name: "agent",
            arguments: { task: "wait", label },
          })),
        },
        { text: "ok" },
      ],
      agents: Object.fromEntries(labels.map((label) => [label, sleeper])),
    }),
  );
  return file;
}

const uniqueToken = () => `${1000 + Math.floor(Math.random() * 8000)}.${Math.floor(Math.random() * 1000)}`;

describe("turn/interrupt over harness serve while three children run sleep 1000", () => {
  it("interrupts the turn, cancels every child and kills their processes (0 survivors)", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const token = uniqueToken();
    const labels = ["one", "two", "three"];
    const script = await sleepersScript(token, labels);
    const server = new StdioServer(
      serverEnv(await serverConfig(), { HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") }),
    );
    try {
      const session = (await server.call("session/start", { workspace, options: { script, shell: "allow" } }))
        .result?.session as string;
      expect(session).toBeTruthy();
      await server.call("turn/start", { session, input: "wait" });
      await until(() => liveWith(token).length >= 3, 60_000);
      expect((await server.call("turn/interrupt", { session })).result).toEqual({});
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.session === session);
      await until(() => liveWith(token).length === 0, 10_000);
      const journal = await readJournal(workspace, session);
      const ends = ofType(journal, "agent.finished").map((r) => r.data);
      expect(ends.map((d) => d.outcome)).toEqual(["cancelled", "cancelled", "cancelled"]);
      expect(ends.every((d) => d.survivors === 0)).toBe(true);
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe.each(["SIGINT", "SIGTERM"] as const)("%s while three children run sleep 1000", (signal) => {
  it("cancels every child, kills their processes (0 survivors) and journals each child's end", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const token = uniqueToken();
    const labels = ["one", "two", "three"];
    const file = await sleepersScript(token, labels);
    const id = `cancel${Math.random().toString(16).slice(2, 8)}`;
    const child = startHarness(
      [
        "run",
        "--script",
        file,
        "--workspace",
        workspace,
        "--session",
        id,
        "--shell",
        "allow",
        "--json",
        "go",
      ],
      { env: { ...childEnv(), HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") } },
    );
    const exit = finished(child);
    await until(() => liveWith(token).length >= 3, 60_000);
    child.kill(signal);
    const result = await exit;
    expect(result.code).not.toBe(0);
    await until(() => liveWith(token).length === 0, 10_000);
    expect(liveWith(token)).toEqual([]);
    const journal = await readJournal(workspace, id);
    const ends = ofType(journal, "agent.finished").map((r) => r.data);
    expect(ends.map((d) => d.outcome).sort()).toEqual(["cancelled", "cancelled", "cancelled"]);
    expect(ends.every((d) => d.survivors === 0)).toBe(true);
    for (const label of labels) {
      const records = await readJournal(workspace, `${id}/${label}`);
      expect(records.at(-1)?.hash).toBe(ends.find((d) => d.child_session === `${id}/${label}`)?.head_hash);
      expect(
        ofType(records, "run.cancelled").length + ofType(records, "turn.interrupted").length,
      ).toBeGreaterThan(0);
    }
  }, 120_000);
});
