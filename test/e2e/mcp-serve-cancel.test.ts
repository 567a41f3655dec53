import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, eventually } from "../support/processes.js";
import { ensureBuilt, readJournal, removeTempDirs, sessionIds, workspaceWith } from "./helpers.js";
import { connectServe } from "./mcp-serve-client.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** Running (a zombie nobody reaped counts as gone). */

describe("harness mcp serve: a client cancels a call (notifications/cancelled)", () => {
  it("stops the governed call: its process tree is killed and its result is journaled as cancelled", async () => {
    const workspace = await workspaceWith({});
    const served = await connectServe(["--workspace", workspace, "--shell", "allow", "--sandbox", "off"]);
    try {
      const controller = new AbortController();
      const call = served.client.callTool(
        { name: "shell", arguments: { command: "sleep 300 & echo $! > child.pid; wait" } },
        { signal: controller.signal },
      );
      const pidFile = join(workspace, "child.pid");
      expect(
        await eventually(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").endsWith("\n"), 30_000),
      ).toBe(true);
      const sleeper = Number(readFileSync(pidFile, "utf8").trim());
      expect(alive(sleeper)).toBe(true);
      controller.abort("the user pressed stop");
      await expect(call).rejects.toThrow();

      const [session] = await sessionIds(workspace);
      const result = async () =>
        (await readJournal(workspace, session!)).find((record) => record.type === "tool.result");
      expect(await eventually(async () => (await result()) !== undefined, 15_000)).toBe(true);
      expect((await result())!.data).toMatchObject({ name: "shell", status: "cancelled" });
      expect(await eventually(() => !alive(sleeper), 10_000)).toBe(true);
      // The session goes on: the next call runs.
      const next = await served.client.callTool({ name: "shell", arguments: { command: "echo after" } });
      expect(next.isError).toBeFalsy();
    } finally {
      await served.close();
    }
  });
});
