import { describe, expect, it } from "vitest";
import { servedConfig } from "../../src/server/session-factory.js";

describe("servedConfig (session/start's options as a SessionConfig)", () => {
  it("takes the client's allow, ask and deny rules, the identity's deny and ask rules joining them", () => {
    const config = servedConfig(
      { write: "allow", shell: "deny", allow: ["shell(make *)"], ask: ["edit_file"], deny: ["shell(rm *)"] },
      { deny: ["shell(curl *)"], ask: ["write_file(*.lock)"] },
      undefined,
    );
    expect(config).toEqual({
      write: "allow",
      shell: "deny",
      allow: ["shell(make *)"],
      ask: ["edit_file", "write_file(*.lock)"],
      deny: ["shell(rm *)", "shell(curl *)"],
      limits: {},
    });
  });

  it("keeps the identity's rules when the client gives none, and the first protocol's booleans", () => {
    expect(servedConfig({ write: true, shell: false }, { deny: ["shell(curl *)"] }, undefined)).toEqual({
      write: "allow",
      shell: "deny",
      deny: ["shell(curl *)"],
      limits: {},
    });
  });
});
