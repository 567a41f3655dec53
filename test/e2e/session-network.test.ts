import { readlinkSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processesIn } from "../../src/sandbox/session-network.js";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  removeTempDirs,
  startHarness,
  workspaceWith,
} from "./helpers.js";

/*
 * One network namespace per session, through the built CLI: two shell calls of a run and its
 * acceptance command are in the same network namespace, which is not the host's, and nothing is
 * left in it once the run has ended.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("harness run: one network namespace per session", () => {
  it("shell calls and the acceptance command share the session's namespace, which ends with the run", async () => {
    const workspace = await workspaceWith({ "README.md": "x\n" });
    const record = (name: string) => `readlink /proc/self/ns/net > ${name}`;
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command: record("first.ns") } }] },
      { calls: [{ id: "s2", name: "shell", arguments: { command: record("second.ns") } }] },
      { text: "done" },
    ]);
    const result = await finished(
      startHarness(
        [
          "run",
          "--script",
          script,
          "--workspace",
          workspace,
          "--json",
          "--shell",
          "allow",
          "--accept",
          `${record("accept.ns")} && test -s accept.ns`,
          "record the namespaces",
        ],
        { env: childEnv() },
      ),
    );
    expectExit(result, 0);
    expect(jsonSummary(result).status).toBe("verified");
    const read = async (name: string) => (await readFile(join(workspace, name), "utf8")).trim();
    const first = await read("first.ns");
    expect(first).toMatch(/^net:\[\d+\]$/);
    expect(first).not.toBe(readlinkSync("/proc/self/ns/net"));
    expect(await read("second.ns")).toBe(first);
    expect(await read("accept.ns")).toBe(first);
    // harness has exited: no process is left in the session's namespace.
    expect(processesIn(first)).toEqual([]);
  });
});
