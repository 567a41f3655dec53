import { describe, expect, it } from "vitest";
import { narrowGrant, type ParentPowers } from "../../../src/session/agents/grant.js";

const parent = (over: Partial<ParentPowers> = {}): ParentPowers => ({
  flags: { deny: ["shell(curl*)"], sandbox: "workspace-write" },
  write: "allow",
  shell: "ask",
  readOnly: false,
  tools: ["read_file", "write_file", "edit_file", "shell", "agent", "mcp__gh__issue"],
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
    expect(grant.notGranted).toEqual(["MCP servers' tools: a child is not given the session's MCP servers"]);
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

  it("keeps tools to the parent's, without MCP tools, and paths to the parent's scope", () => {
    const grant = narrowGrant(parent({ flags: { readPaths: ["a.txt", "b.txt"], editPaths: ["a.txt"] } }), {
      tools: ["read_file", "grep", "mcp__gh__issue"],
      read_paths: ["a.txt", "secret.txt"],
      isolation: "copy",
    });
    expect(grant.flags.tools).toBe("read_file");
    expect(grant.flags.readPaths).toEqual(["a.txt"]);
    expect(grant.flags.editPaths).toEqual(["a.txt"]);
    expect(grant.notGranted).toEqual(
      expect.arrayContaining([
        'tool "grep": this session is not offered it',
        'tool "mcp__gh__issue": this session is not offered it',
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
});
