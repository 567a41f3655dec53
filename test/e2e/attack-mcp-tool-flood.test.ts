import { existsSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  FIXTURES,
  finished,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { recordingScript, run, userConfig } from "./mcp-run-support.js";

/*
 * A hostile MCP server's tool list: 100,000 tools in one page, pages of 100 KB schemas without end,
 * pages without end, a listing that never finishes. Before, harness took every tool it was sent
 * (38k tools: 45 s and 1.7 GB; 228k: past 4 GB, SIGTERM ignored). Now the server's listing is
 * refused past a bound, with the reason journaled and said, and the run goes on without it (or
 * stops, when the server is required). The runs here get a 256 MB heap: a harness that held such
 * a list would die of it.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const SERVER = join(FIXTURES, "mcp-raw-server.mjs");

function flood(env: Record<string, string>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [SERVER], env, read_paths: [FIXTURES], ...extra };
}

/** The child environment with a heap small enough that holding a flooded list would kill harness. */
const bounded = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
  ...env,
  NODE_OPTIONS: "--max-old-space-size=256",
});

interface Unavailable {
  server: string;
  tool: string;
  reason: string;
}

describe("a hostile MCP server's tool list is bounded", () => {
  for (const [label, list, reason] of [
    ["100,000 tools in one page", "many:100000", /it lists more than 1000 tools/],
    ["pages of 100 KB schemas without end", "huge:20", /its tool definitions exceed 4194304 bytes/],
    ["pages without end", "endless", /it took more than 64 pages/],
    ["a listing that never finishes", "hang", /listing did not finish within 3000 ms/],
  ] as const) {
    it(`${label}: the listing is refused with the reason, journaled, and the run goes on`, async () => {
      const workspace = await workspaceWith({});
      const mark = join(workspace, "flood.log");
      const { env } = await userConfig({
        mcp_servers: { flood: flood({ RAW_LIST: list, RAW_MARK: mark }, { startup_timeout_ms: 3_000 }) },
      });
      const model = await recordingScript({ name: "read_file", arguments: { path: "missing.txt" } });
      const result = await run(
        ["run", "--workspace", workspace, "--script", model.path, "--json", "go"],
        bounded(env),
      );
      expectExit(result, 0);
      expect(readFileSync(mark, "utf8")).toContain("list");
      expect(result.stderr).toMatch(
        /harness: note: MCP server "flood" offers no tools: its tool list was refused: /,
      );
      expect(result.stderr).toMatch(reason);
      const records = await readJournal(workspace, String(jsonSummary(result).session));
      const started = ofType(records, "session.started")[0]!;
      const tools = (started.data.tools as { name: string }[]).map((t) => t.name);
      expect(tools.some((name) => name.startsWith("mcp__"))).toBe(false);
      const unavailable = started.data.unavailable as Unavailable[];
      expect(unavailable).toEqual([{ server: "flood", tool: "*", reason: expect.stringMatching(reason) }]);
      // The model was still asked, and answered.
      expect((await model.requests()).map((r) => r.step)).toEqual([0, 1]);
    }, 120_000);
  }

  it("every server's tools together are bounded: the server that would pass the session's total is refused", async () => {
    const workspace = await workspaceWith({});
    // Three servers of about 3 MB each: each within its own 4 MiB, the third past the 8 MiB of all.
    const { env } = await userConfig({
      mcp_servers: {
        a: flood({ RAW_LIST: "huge:15:2" }),
        b: flood({ RAW_LIST: "huge:15:2" }),
        c: flood({ RAW_LIST: "huge:15:2" }),
      },
    });
    const model = await recordingScript({ name: "read_file", arguments: { path: "x" } });
    // All up front (deferred, tool_search would keep them out of the request).
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--defer-tools", "never", "--json", "go"],
      bounded(env),
    );
    // Six megabytes of tools do not fit the scripted model's context window: the run stops before
    // its first request, after journaling what it offered.
    expect(jsonSummary(result)).toMatchObject({ reason: "context_exhausted" });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const started = ofType(records, "session.started")[0]!;
    const tools = (started.data.tools as { name: string }[]).map((t) => t.name);
    expect(tools.filter((name) => name.startsWith("mcp__a__"))).toHaveLength(30);
    expect(tools.filter((name) => name.startsWith("mcp__b__"))).toHaveLength(30);
    expect(tools.filter((name) => name.startsWith("mcp__c__"))).toEqual([]);
    expect(started.data.unavailable).toEqual([
      {
        server: "c",
        tool: "*",
        reason: expect.stringMatching(/every server together would exceed 8388608 bytes/),
      },
    ]);
  }, 120_000);

  it("a required server whose listing is refused stops the run before any model request", async () => {
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: { flood: flood({ RAW_LIST: "many:100000" }, { required: true }) },
    });
    const model = await recordingScript({ name: "read_file", arguments: { path: "x" } });
    const result = await run(["run", "--workspace", workspace, "--script", model.path, "go"], bounded(env));
    expectExit(result, 2);
    expect(result.stderr).toContain("a required MCP server could not start");
    expect(result.stderr).toMatch(/its tool list was refused: it lists more than 1000 tools/);
    expect(await model.requests()).toEqual([]);
    expect(sessionIds(workspace)).toEqual([]);
  }, 120_000);

  it("a list that floods after a change mid-run is refused at the refresh: the server's tools are withdrawn in tools.changed", async () => {
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: { flood: flood({ RAW_LIST: "small", RAW_LIST_AFTER: "many:100000" }) },
    });
    const model = await recordingScript({ name: "mcp__flood__grow", arguments: {} });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__flood__*", "--json", "go"],
      bounded(env),
    );
    expectExit(result, 0);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const changes = ofType(records, "tools.changed");
    expect(changes).toHaveLength(1);
    expect(changes[0]!.data).toMatchObject({
      reason: "refresh",
      added: [],
      removed: ["mcp__flood__exit", "mcp__flood__grow", "mcp__flood__ok"],
      unavailable: [
        { server: "flood", tool: "*", reason: expect.stringMatching(/it lists more than 1000 tools/) },
      ],
    });
  }, 120_000);

  it("SIGTERM while a refresh is listing ends the run promptly", async () => {
    const workspace = await workspaceWith({});
    const mark = join(workspace, "flood.log");
    const { env } = await userConfig({
      // The listing's own deadline is far away: only the signal can end it in time.
      mcp_servers: {
        flood: flood(
          { RAW_LIST: "small", RAW_LIST_AFTER: "hang", RAW_MARK: mark },
          { startup_timeout_ms: 600_000 },
        ),
      },
    });
    const dir = await tempDir("harness-mcp-script-");
    const script = join(dir, "model.mjs");
    await writeFile(
      script,
      `export default function model(messages, step) {
  if (step === 0) return { text: "grow", calls: [{ id: "c1", name: "mcp__flood__grow", arguments: {} }] };
  return { text: "done" };
}
`,
    );
    const child = startHarness(
      ["run", "--workspace", workspace, "--script", script, "--allow", "mcp__flood__*", "--json", "go"],
      { env: bounded(env) },
    );
    const done = finished(child);
    // The second tools/list request is the refresh's: the server never answers it.
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        const lines = existsSync(mark) ? readFileSync(mark, "utf8").split("\n") : [];
        if (lines.filter((line) => line === "list").length >= 2) resolve();
        else if (child.exitCode !== null) reject(new Error("harness exited before the refresh"));
        else setTimeout(check, 20);
      };
      check();
    });
    const signalled = Date.now();
    child.kill("SIGTERM");
    const result = await done;
    expect(Date.now() - signalled).toBeLessThan(30_000);
    expect(result.signal).toBeNull();
    const summary = jsonSummary(result);
    expect(summary.status).toMatch(/cancelled|stopped/);
    const records = await readJournal(workspace, String(summary.session));
    expect(ofType(records, "tool.result").map((r) => r.data.call_id)).toEqual(["c1"]);
  }, 120_000);
});
