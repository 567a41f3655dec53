import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assignToolNames,
  MAX_TOOL_NAME_LENGTH,
  type McpToolRef,
  sanitizeNamePart,
} from "../../src/mcp/names.js";
import { sha256Hex } from "../../src/shared/hash.js";

const PROVIDER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const exposed = (tools: McpToolRef[]) => assignToolNames(tools).map((t) => t.exposed);
const suffix = (server: string, raw: string) => sha256Hex(`${server}\u0000${raw}`).slice(0, 8);

describe("MCP tool names", () => {
  it("are mcp__SERVER__TOOL when the names are already valid, keeping the raw name for the wire", () => {
    expect(
      assignToolNames([
        { server: "github", raw: "search_issues" },
        { server: "fs", raw: "read-Text-File" },
      ]),
    ).toEqual([
      { server: "github", raw: "search_issues", exposed: "mcp__github__search_issues" },
      { server: "fs", raw: "read-Text-File", exposed: "mcp__fs__read-Text-File" },
    ]);
  });

  it("replace characters providers refuse (unicode included) and mark the changed name with a hash", () => {
    expect(sanitizeNamePart("get.user/by id")).toBe("get_user_by_id");
    expect(sanitizeNamePart("héllo😀")).toBe("h_llo_");
    expect(exposed([{ server: "my.server", raw: "héllo😀" }])).toEqual([
      `mcp__my_server__h_llo__${suffix("my.server", "héllo😀")}`,
    ]);
  });

  it("give colliding tools distinct names, the one spelled exactly keeping the plain name", () => {
    const names = exposed([
      { server: "s", raw: "a.b" },
      { server: "s", raw: "a_b" },
      { server: "s", raw: "a b" },
    ]);
    expect(names).toEqual([
      `mcp__s__a_b_${suffix("s", "a.b")}`,
      "mcp__s__a_b",
      `mcp__s__a_b_${suffix("s", "a b")}`,
    ]);
  });

  it("hash every tool of a collision when more than one is spelled exactly (a server name with __)", () => {
    const names = exposed([
      { server: "a", raw: "b__c" },
      { server: "a__b", raw: "c" },
    ]);
    expect(names).toEqual([`mcp__a__b__c_${suffix("a", "b__c")}`, `mcp__a__b__c_${suffix("a__b", "c")}`]);
  });

  it("cut long names to 64 characters with a hash, so two long names with one prefix differ", () => {
    const long = "x".repeat(100);
    const names = exposed([
      { server: "server", raw: `${long}_one` },
      { server: "server", raw: `${long}_two` },
    ]);
    for (const name of names) {
      expect(name).toHaveLength(MAX_TOOL_NAME_LENGTH);
      expect(name).toMatch(PROVIDER_NAME);
      expect(name.startsWith("mcp__server__xxxx")).toBe(true);
    }
    expect(names[0]).toBe(`mcp__server__${"x".repeat(42)}_${suffix("server", `${long}_one`)}`);
    expect(names[0]).not.toBe(names[1]);
    // Exactly 64 characters is not cut.
    const fits = "y".repeat(MAX_TOOL_NAME_LENGTH - "mcp__s__".length);
    expect(exposed([{ server: "s", raw: fits }])).toEqual([`mcp__s__${fits}`]);
  });

  it("settle a hashed name that meets another tool's plain name by a longer hash", () => {
    const clash = `a_b_${suffix("s", "a.b")}`;
    const names = exposed([
      { server: "s", raw: "a.b" },
      { server: "s", raw: "a_b" },
      { server: "s", raw: clash },
    ]);
    expect(new Set(names).size).toBe(3);
    expect(names[1]).toBe("mcp__s__a_b");
    expect(names[0]).toBe(`mcp__s__a_b_${sha256Hex("s\u0000a.b").slice(0, 16)}`);
  });

  it("are valid, distinct and independent of the listing order, whatever the names", () => {
    const part = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constantFrom("a", "a_b", "a.b", "a b", "__", "x".repeat(70), "é"),
    );
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ server: part, raw: part }), {
          maxLength: 12,
          selector: (t) => `${t.server}\u0000${t.raw}`,
        }),
        (tools) => {
          const forward = assignToolNames(tools);
          const names = forward.map((t) => t.exposed);
          expect(new Set(names).size).toBe(names.length);
          for (const name of names) expect(name).toMatch(PROVIDER_NAME);
          const backward = assignToolNames([...tools].reverse());
          const byKey = (list: typeof forward) =>
            Object.fromEntries(list.map((t) => [`${t.server}\u0000${t.raw}`, t.exposed]));
          expect(byKey(backward)).toEqual(byKey(forward));
        },
      ),
      { numRuns: 300 },
    );
  });
});
