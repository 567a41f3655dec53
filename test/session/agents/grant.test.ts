import { describe, expect, it } from "vitest";
import { narrowGrant, type ParentPowers } from "../../../src/session/agents/grant.js";

const parent = (over: Partial<ParentPowers> = {}): ParentPowers => ({
  flags: { deny: ["shell(curl*)"], sandbox: "workspace-write" },
  write: "allow",
  shell: "ask",
  readOnly: false,
  tools: ["read_file", "write_file", "edit_file", "shell", "agent", "mcp__gh__issue"],
  mcpEffects: { mcp__gh__issue: "network_write" },
  ...over,
});

describe("a child's grant", () => {
  it("never gets a looser mode than its parent, and says what it did not get", () => {
    const grant = narrowGrant(parent(), { shell: "allow", write: "allow", isolation: "copy" });
    expect(grant.flags.shell).toBe("ask");
    expect(grant.flags.write).toBe("allow");
    expect(grant.flags.deny).toEqual(["shell(curl*)"]);
    expect(grant.notGranted).toContain('shell "allow": this session has shell "ask"');
  });

  it("takes the lesser mode when it asks for less", () => {
    const grant = narrowGrant(parent(), { write: "propose", shell: "deny", isolation: "copy" });
    expect(grant.flags.write).toBe("propose");
    expect(grant.flags.shell).toBe("deny");
    expect(grant.notGranted).toEqual([
      "MCP tools that are not read-only (mcp__gh__issue): granted only when named in tools",
    ]);
  });

  it("a read-only parent has read-only children; a shared child cannot write", () => {
    const ro = narrowGrant(parent({ readOnly: true, write: "deny" }), { write: "allow", isolation: "copy" });
    expect(ro.flags.readOnly).toBe(true);
    expect(ro.flags.write).toBe("deny");
    const shared = narrowGrant(parent(), { write: "allow", isolation: "shared" });
    expect(shared.flags.readOnly).toBe(true);
    expect(shared.flags.write).toBe("deny");
    expect(shared.notGranted.some((line) => line.includes("shared child"))).toBe(true);
  });

  it("a propose parent has propose children", () => {
    const grant = narrowGrant(parent({ write: "propose" }), { write: "allow", isolation: "copy" });
    expect(grant.flags.write).toBe("propose");
  });

  it("keeps tools to the parent's and paths to the parent's scope", () => {
    const grant = narrowGrant(parent({ flags: { readPaths: ["a.txt", "b.txt"], editPaths: ["a.txt"] } }), {
      tools: ["read_file", "grep", "mcp__gh__other"],
      read_paths: ["a.txt", "secret.txt"],
      isolation: "copy",
    });
    expect(grant.flags.tools).toBe("read_file");
    expect(grant.flags.readPaths).toEqual(["a.txt"]);
    expect(grant.flags.editPaths).toEqual(["a.txt"]);
    expect(grant.notGranted).toEqual(
      expect.arrayContaining([
        'tool "grep": this session is not offered it',
        'tool "mcp__gh__other": this session is not offered it',
        'read path "secret.txt": outside this session\'s scope',
      ]),
    );
    expect(grant.recorded.not_granted).toEqual(grant.notGranted);
  });

  it("reads the files it may edit: edit paths alone are its whole scope, never more than the parent's", () => {
    const alone = narrowGrant(parent(), { edit_paths: ["a.txt"], isolation: "copy" });
    expect(alone.flags.readPaths).toEqual(["a.txt"]);
    expect(alone.flags.editPaths).toEqual(["a.txt"]);
    const scoped = narrowGrant(parent({ flags: { readPaths: ["a.txt", "b.txt"], editPaths: ["a.txt"] } }), {
      read_paths: ["b.txt"],
      edit_paths: ["a.txt", "c.txt"],
      isolation: "copy",
    });
    expect(scoped.flags.readPaths).toEqual(["b.txt", "a.txt"]);
    expect(scoped.flags.editPaths).toEqual(["a.txt"]);
    expect(scoped.notGranted).toContain('edit path "c.txt": outside this session\'s scope');
  });

  describe("MCP tools (they act on the parent's servers, outside the child's copy)", () => {
    const withMcp = (over: Partial<ParentPowers> = {}) =>
      parent({
        tools: ["read_file", "mcp__docs__search", "mcp__gh__issue"],
        mcpEffects: { mcp__docs__search: "read_only", mcp__gh__issue: "network_write" },
        ...over,
      });

    it("grants read-only ones by default and records each with its effect; others only when named", () => {
      const grant = narrowGrant(withMcp(), { isolation: "copy" });
      expect(grant.flags.tools).toBe("read_file,mcp__docs__search");
      expect(grant.recorded.mcp_tools).toEqual({ mcp__docs__search: "read_only" });
      expect(grant.notGranted).toEqual([
        "MCP tools that are not read-only (mcp__gh__issue): granted only when named in tools",
      ]);
    });

    it("a subset keeps only the MCP tools it names", () => {
      const grant = narrowGrant(withMcp(), { tools: ["read_file"], isolation: "copy" });
      expect(grant.flags.tools).toBe("read_file");
      expect(grant.recorded.mcp_tools).toBeUndefined();
      expect(grant.notGranted).toEqual([]);
    });

    it("grants a named writing one only to a child that may write without proposals", () => {
      const named = { tools: ["mcp__gh__issue"], isolation: "copy" as const };
      const granted = narrowGrant(withMcp(), named);
      expect(granted.flags.tools).toBe("mcp__gh__issue");
      expect(granted.recorded.mcp_tools).toEqual({ mcp__gh__issue: "network_write" });
      for (const [powers, request] of [
        [withMcp({ write: "propose" }), named],
        [withMcp({ readOnly: true, write: "deny" }), named],
        [withMcp(), { ...named, isolation: "shared" as const }],
        [withMcp(), { ...named, write: "propose" as const }],
      ] as const) {
        const refused = narrowGrant(powers, request);
        expect(refused.flags.tools).toBe("");
        expect(refused.notGranted.join("\n")).toContain(
          'tool "mcp__gh__issue" (effect network_write): an MCP tool that is not read-only acts outside',
        );
      }
    });

    it("an MCP tool whose effect is not known is never taken for read-only", () => {
      const grant = narrowGrant(withMcp({ mcpEffects: {} }), { isolation: "copy" });
      expect(grant.flags.tools).toBe("read_file");
    });
  });
});
