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

  it("takes the network mode only when the client gives it (off by default), the identity's net rules joining", () => {
    expect(
      servedConfig(
        { network: "policy", allow: ["net(registry.npmjs.org:443)"] },
        { deny: ["net(*.evil.test)"] },
        undefined,
      ),
    ).toEqual({
      network: "policy",
      allow: ["net(registry.npmjs.org:443)"],
      deny: ["net(*.evil.test)"],
      limits: {},
    });
    expect(servedConfig({}, {}, undefined).network).toBeUndefined();
  });

  it("takes the run command's sandbox, read-only, scope, context window, deadline and key variable", () => {
    expect(
      servedConfig(
        {
          sandbox: "read-only",
          read_only: true,
          read_path: ["src"],
          edit_path: ["src/app.ts"],
          context_window: 64_000,
          request_deadline_ms: 90_000,
          api_key_env: "MY_KEY",
        },
        {},
        undefined,
      ),
    ).toEqual({
      sandbox: "read-only",
      readOnly: true,
      readPaths: ["src"],
      editPaths: ["src/app.ts"],
      contextWindow: 64_000,
      requestDeadlineMs: 90_000,
      apiKeyEnv: "MY_KEY",
      limits: {},
    });
  });

  it("takes the run command's goal loop (until_accepted, no_progress), which the session records", () => {
    expect(servedConfig({ accept: ["npm test"], until_accepted: 4, no_progress: 1 }, {}, undefined)).toEqual({
      accept: ["npm test"],
      untilAccepted: 4,
      noProgress: 1,
      limits: {},
    });
  });

  it("takes the run command's agent limits, only those given", () => {
    expect(servedConfig({ agents_depth: 2, agents_max: 3 }, {}, undefined)).toEqual({
      agents: { depth: 2, max: 3 },
      limits: {},
    });
    expect(servedConfig({ agents_concurrent: 1 }, {}, undefined).agents).toEqual({ concurrent: 1 });
    expect(servedConfig({}, {}, undefined).agents).toBeUndefined();
  });
});
