import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  workspaceWith,
} from "./helpers.js";
import { recordingScript, run, userConfig } from "./mcp-run-support.js";

/**
 * What a hook and a local MCP server change in the workspace is in the record as theirs: the
 * tree is compared around each, so audit finds nothing outside the record and undo takes each
 * back by its own call id.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const WRITER = join(dirname(fileURLToPath(import.meta.url)), "fixtures/mcp-writer-server.mjs");

describe("the workspace record around hooks and MCP servers", () => {
  it("attributes a command hook's file and an MCP server's file to their sources; undo reverts each", {
    timeout: 120_000,
  }, async () => {
    const workspace = await workspaceWith({ "keep.txt": "k\n" });
    const { env } = await userConfig({
      mcp_servers: { w: { command: process.execPath, args: [WRITER], sandbox: "off" } },
      hooks: { after_project: [{ kind: "notify", command: "printf hooked > hook-made.txt" }] },
      hook_commands: { sandbox: "workspace-write" },
    });
    const model = await recordingScript({
      name: "mcp__w__write",
      arguments: { name: "mcp-made.txt", text: "from the server" },
    });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__w__*", "--json", "go"],
      env,
    );
    expectExit(result, 0);
    const session = String(jsonSummary(result).session);
    expect(readFileSync(join(workspace, "mcp-made.txt"), "utf8")).toBe("from the server");
    expect(readFileSync(join(workspace, "hook-made.txt"), "utf8")).toBe("hooked");

    const records = await readJournal(workspace, session);
    const changes = ofType(records, "workspace.changed").map((r) => ({
      call_id: r.data.call_id,
      source: r.data.source,
      created: (r.data.created as { path: string }[]).map((c) => c.path),
      modified: r.data.modified,
      deleted: r.data.deleted,
    }));
    expect(changes).toEqual([
      { call_id: "c1", source: "mcp", created: ["mcp-made.txt"], modified: [], deleted: [] },
      {
        call_id: "hook:after_project:c1",
        source: "hook",
        created: ["hook-made.txt"],
        modified: [],
        deleted: [],
      },
    ]);
    // In the order they were made: the server's change, then the hook's (which ran after the
    // call, before its result was committed), then the result.
    const seqOf = (type: string, id: string) =>
      records.find((r) => r.type === type && r.data.call_id === id)!.seq;
    expect(seqOf("workspace.changed", "c1")).toBeLessThan(
      seqOf("workspace.changed", "hook:after_project:c1"),
    );
    expect(seqOf("workspace.changed", "hook:after_project:c1")).toBeLessThan(seqOf("tool.result", "c1"));

    const audit = await run(["audit", session, "--workspace", workspace, "--json"], env);
    expectExit(audit, 0);
    expect(JSON.parse(audit.stdout)).toMatchObject({
      outside: { created: [], modified: [], deleted: [] },
      recorded_outside: 0,
    });

    // Undo the hook alone, then the MCP call.
    const hook = await run(
      ["undo", session, "--workspace", workspace, "--to", "hook:after_project:c1", "--json"],
      env,
    );
    expectExit(hook, 0);
    expect(existsSync(join(workspace, "hook-made.txt"))).toBe(false);
    expect(readFileSync(join(workspace, "mcp-made.txt"), "utf8")).toBe("from the server");
    const mcp = await run(["undo", session, "--workspace", workspace, "--to", "c1", "--json"], env);
    expectExit(mcp, 0);
    expect(existsSync(join(workspace, "mcp-made.txt"))).toBe(false);
    expect(readFileSync(join(workspace, "keep.txt"), "utf8")).toBe("k\n");
    expectExit(await run(["audit", session, "--workspace", workspace], env), 0);
  });
});
