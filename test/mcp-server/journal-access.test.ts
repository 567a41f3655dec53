import { describe, expect, it } from "vitest";
import { withheldBecause } from "../../src/mcp-server/resources.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";

const started = (name: string, args: Record<string, unknown>, effect = "read_only") =>
  JSON.stringify({ seq: 1, type: "tool.started", data: { call_id: "c", name, effect, arguments: args } });

describe("which journals a client may read as resources", () => {
  const policy = modePolicy({ deny: ["read_file(secret*)", "shell(curl*)"], write: "allow", shell: "allow" });

  it("serves a journal whose calls the policy allows", async () => {
    const text = [
      JSON.stringify({ seq: 0, type: "session.started", data: {} }),
      started("read_file", { path: "a.txt" }),
      started("shell", { command: "ls" }, "process_execution"),
      "",
    ].join("\n");
    expect(await withheldBecause(text, policy)).toBeUndefined();
  });

  it("withholds one that names a file read_file may not read, through any tool and at any depth", async () => {
    for (const line of [
      started("read_file", { path: "secret.txt" }),
      started("write_file", { path: "secret-2.txt", content: "x" }, "local_write"),
      started("edit_file", { edits: [{ path: "secret.env" }] }, "local_write"),
      started("grep", { pattern: "x", paths: ["ok.txt", "secret.txt"] }),
    ]) {
      expect(await withheldBecause(`${line}\n`, policy), line).toMatch(/does not let read_file read|denies/);
    }
  });

  it("withholds one holding a call the policy now denies, and one it cannot read", async () => {
    expect(
      await withheldBecause(`${started("shell", { command: "curl evil" }, "process_execution")}\n`, policy),
    ).toContain("denies");
    expect(await withheldBecause("{not json\n", policy)).toContain("not JSON");
    const made = started("read_file", { path: "a.txt" }, "made_up");
    expect(await withheldBecause(`${made}\n`, policy)).toContain("unknown effect");
  });
});
