import { describe, expect, it } from "vitest";
import { mcpStats, serverOfTool } from "../../src/cli/mcp-stats.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { assignToolNames } from "../../src/mcp/names.js";

function result(name: string, status: string): AnyRecord {
  return {
    seq: 0,
    time: "2026-01-01T00:00:00.000Z",
    type: "tool.result",
    data: { call_id: "c", name, status, summary: "", content: "", duration_ms: 1 },
  } as unknown as AnyRecord;
}

describe("MCP calls per server (inspect)", () => {
  it("reads the server from exposed names, also shortened or hashed ones, and ignores built-ins", () => {
    const long = "x".repeat(100);
    const [named] = assignToolNames([{ server: "git-hub_2", raw: long }]);
    expect(named!.exposed.length).toBeLessThanOrEqual(64);
    expect(serverOfTool(named!.exposed)).toBe("git-hub_2");
    expect(serverOfTool("mcp__docs__search__deep")).toBe("docs");
    expect(serverOfTool("read_file")).toBeUndefined();
    expect(serverOfTool("mcp____x")).toBeUndefined();
  });

  it("counts calls by how they ended, per server, in name order", () => {
    const stats = mcpStats([
      result("mcp__zeta__a", "ok"),
      result("mcp__alpha__a", "ok"),
      result("mcp__alpha__b", "denied"),
      result("mcp__alpha__a", "unknown"),
      result("mcp__alpha__a", "error"),
      result("shell", "error"),
    ]);
    expect(stats).toEqual([
      { server: "alpha", calls: 4, ok: 1, errors: 1, denied: 1, unknown: 1 },
      { server: "zeta", calls: 1, ok: 1, errors: 0, denied: 0, unknown: 0 },
    ]);
  });
});
