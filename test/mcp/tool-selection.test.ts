import { describe, expect, it } from "vitest";
import { parseToolSelection } from "../../src/mcp/tool-selection.js";
import type { EffectClass } from "../../src/tools/tool.js";

const tool = (name: string, effect: EffectClass) => ({ name, effect });

describe("--tools for MCP tools", () => {
  it("coding offers every MCP tool; readonly only read-only ones; shell-only and files none", () => {
    const write = tool("mcp__s__put", "external_side_effect");
    const read = tool("mcp__s__get", "read_only");
    const fetch = tool("mcp__s__fetch", "network_read");
    const offered = (selection: string) =>
      [write, read, fetch].filter((t) => parseToolSelection(selection).mcp(t)).map((t) => t.name);
    expect(offered("coding")).toEqual(["mcp__s__put", "mcp__s__get", "mcp__s__fetch"]);
    expect(offered("readonly")).toEqual(["mcp__s__get", "mcp__s__fetch"]);
    expect(offered("shell-only")).toEqual([]);
    expect(offered("files")).toEqual([]);
    expect(parseToolSelection("readonly").builtins).toBe("readonly");
  });

  it("a list selects MCP tools by name or * pattern and leaves the rest to the built-in selection", () => {
    const selection = parseToolSelection("read_file, mcp__github__*,mcp__db__query");
    expect(selection.builtins).toBe("read_file");
    expect(selection.mcp(tool("mcp__github__create_issue", "destructive"))).toBe(true);
    expect(selection.mcp(tool("mcp__db__query", "read_only"))).toBe(true);
    expect(selection.mcp(tool("mcp__db__query_all", "read_only"))).toBe(false);
    expect(selection.mcp(tool("mcp__githubx__a", "read_only"))).toBe(false);
    // Only MCP names: no built-in tool at all.
    expect(parseToolSelection("mcp__db__*").builtins).toBeUndefined();
    // Regex characters in a name are literal.
    expect(parseToolSelection("mcp__a.b__c").mcp(tool("mcp__aXb__c", "read_only"))).toBe(false);
    // Nothing selected stays an error for the built-in selection to report.
    expect(parseToolSelection(" , ").builtins).toBe("");
  });
});
