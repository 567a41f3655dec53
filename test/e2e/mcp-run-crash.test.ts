import { existsSync } from "node:fs";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, eventually } from "../support/processes.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { EVERYTHING, run, userConfig } from "./mcp-run-support.js";

/**
 * An unsandboxed MCP stdio server is not inside a pid namespace that dies with harness: when
 * harness is SIGKILLed, its tree lives on. Its start is journaled (process.spawned, purpose
 * mcp_server), so the resume finds that tree and kills it, as it does for a crashed shell call.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const SESSION = "mcp-crash";

/** Running (a zombie nobody reaped, as in a container without an init, counts as gone). */

describe("an MCP server left running by a SIGKILLed harness", () => {
  it("is journaled when it starts and killed, with its whole tree, when the session resumes", async () => {
    const dir = await tempDir("harness-mcp-crash-");
    const workspace = await workspaceWith({});
    // The server leaves a background child in its process group: it outlives the server's stdin.
    const server = join(dir, "server.sh");
    const childPid = join(dir, "child-pid");
    await writeFile(
      server,
      `#!/bin/sh\nsleep 300 &\necho $! > "${childPid}"\nexec "${process.execPath}" "${EVERYTHING}" stdio\n`,
    );
    await chmod(server, 0o755);
    const { env } = await userConfig({ mcp_servers: { keep: { command: server, sandbox: "off" } } });
    // The first model request blocks after leaving a mark: harness is killed while it waits.
    const asked = join(dir, "asked");
    const model = join(dir, "model.mjs");
    await writeFile(
      model,
      `import { existsSync, writeFileSync } from "node:fs";
export default async function model(messages, step) {
  if (!existsSync(${JSON.stringify(asked)})) {
    writeFileSync(${JSON.stringify(asked)}, "");
    await new Promise(() => setInterval(() => {}, 1000));
  }
  return { text: "done" };
}
`,
    );
    const args = ["--workspace", workspace, "--script", model];
    const child = startHarness(["run", ...args, "--session", SESSION, "say hi"], { env });
    expect(await eventually(() => existsSync(asked), 60_000)).toBe(true);
    child.kill("SIGKILL");
    await finished(child);

    const records = await readJournal(workspace, SESSION);
    const spawned = ofType(records, "process.spawned");
    expect(spawned).toHaveLength(1);
    expect(spawned[0]!.data).toMatchObject({
      call_id: "mcp_server:keep",
      purpose: "mcp_server",
      sandboxed: false,
    });
    // Journaled after the session's header, before the first model request.
    const types = records.map((record) => record.type);
    expect(types.indexOf("process.spawned")).toBeGreaterThan(types.indexOf("session.started"));
    expect(types.indexOf("process.spawned")).toBeLessThan(types.indexOf("model.started"));
    const sleeper = Number((await readFile(childPid, "utf8")).trim());
    const leader = spawned[0]!.data.pid as number;
    expect(alive(sleeper)).toBe(true);
    expect(alive(leader)).toBe(true);

    const resumed = await run(["resume", SESSION, ...args], env);
    expectExit(resumed, 0);
    expect(alive(sleeper)).toBe(false);
    expect(alive(leader)).toBe(false);
    // The resumed run journaled its own server, which it stopped at its end.
    const after = ofType(await readJournal(workspace, SESSION), "process.spawned");
    expect(after).toHaveLength(2);
    expect(after[1]!.data.pid).not.toBe(leader);
    expect(alive(after[1]!.data.pid as number)).toBe(false);
  });
});
