import { describe, expect, it } from "vitest";
import type { ConnectionInfo } from "../../src/engine/recovery.js";
import { parseRule } from "../../src/rules/grammar.js";
import type { ApprovalPort, ApprovalRequest } from "../../src/runtime/ports.js";
import { sessionNetwork } from "../../src/session/network.js";

function approver(answer: "allow" | "deny", scope: "once" | "session" = "once") {
  const asked: ApprovalRequest[] = [];
  const port: ApprovalPort = {
    request: async (request) => {
      asked.push(request);
      return { decision: answer, scope, by: "test" };
    },
  };
  return { port, asked };
}

const policy = {
  rules: [
    parseRule("allow", "net(registry.npmjs.org:443)", "cli"),
    parseRule("ask", "net(*.example.org)", "user config"),
  ],
};

describe("a session's network decisions", () => {
  it("asks the approver for an ask rule, showing host, port and the call; once per call and target", async () => {
    const { port, asked } = approver("allow");
    const network = sessionNetwork({ policy, approver: () => port, record: async () => undefined });
    const call = network("call_7");
    expect(await call.decide("api.example.org", 443)).toMatchObject({
      decision: "allow",
      rule: "net(*.example.org)",
    });
    await call.decide("api.example.org", 443);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      callId: "call_7",
      tool: "net",
      arguments: { host: "api.example.org", port: 443 },
      subject: { value: "api.example.org:443" },
      display: { details: { host: "api.example.org", port: "443", call: "call_7" } },
    });
    // Another call asks again: "once" was for call_7.
    await network("call_8").decide("api.example.org", 443);
    expect(asked).toHaveLength(2);
  });

  it("an answer for the session holds for later calls; a refusal denies", async () => {
    const session = approver("deny", "session");
    const network = sessionNetwork({ policy, approver: () => session.port, record: async () => undefined });
    expect(await network("a").decide("api.example.org", 443)).toMatchObject({ decision: "deny" });
    expect(await network("b").decide("api.example.org", 443)).toMatchObject({ decision: "deny" });
    expect(session.asked).toHaveLength(1);
  });

  it("denies an ask with no approver, allows by rule without asking, and records with the call id", async () => {
    const records: ConnectionInfo[] = [];
    const network = sessionNetwork({
      policy,
      approver: () => undefined,
      record: async (connection) => {
        records.push(connection);
      },
    });
    const call = network("call_1");
    expect((await call.decide("api.example.org", 443)).decision).toBe("deny");
    expect(await call.decide("registry.npmjs.org", 443)).toMatchObject({ decision: "allow", exact: true });
    expect((await call.decide("registry.npmjs.org", 80)).decision).toBe("deny");
    call.record({
      host: "registry.npmjs.org",
      port: 443,
      decision: "allow",
      bytes_up: 1,
      bytes_down: 2,
      ms: 3,
    });
    expect(records).toEqual([
      {
        call_id: "call_1",
        host: "registry.npmjs.org",
        port: 443,
        decision: "allow",
        bytes_up: 1,
        bytes_down: 2,
        ms: 3,
      },
    ]);
  });
});

describe("a session's network after untrusted content", () => {
  const seen = [{ call_id: "call_1", name: "web_fetch", provenance: "http://docs.example.org/" }];
  const rules = { rules: [parseRule("allow", "net(*.example.org)", "cli")] };
  const view = (untrusted: typeof seen, contacted: string[]) => ({
    untrusted: () => untrusted,
    contacted: (target: string) => contacted.includes(target),
  });

  it("asks for a host not contacted before even where a rule allows it; no approver denies with the reason", async () => {
    const network = sessionNetwork({
      policy: rules,
      approver: () => undefined,
      record: async () => undefined,
      untrusted: view(seen, ["docs.example.org:80"]),
    });
    const call = network("call_2");
    // Contacted before: the rule holds.
    expect(await call.decide("docs.example.org", 80)).toMatchObject({ decision: "allow" });
    expect(await call.decide("other.example.org", 80)).toEqual({
      decision: "deny",
      rule: "net(*.example.org)",
      reason:
        "not approved: untrusted content seen: web_fetch call_1 (http://docs.example.org/); allow rule net(*.example.org) from cli",
      exact: false,
    });
  });

  it("shows the approver the content that came before; without untrusted content nothing is asked", async () => {
    const { port, asked } = approver("allow");
    const tainted = sessionNetwork({
      policy: rules,
      approver: () => port,
      record: async () => undefined,
      untrusted: view(seen, []),
    });
    expect(await tainted("call_2").decide("other.example.org", 443)).toMatchObject({ decision: "allow" });
    expect(asked).toHaveLength(1);
    expect(asked[0]?.display?.details).toMatchObject({
      host: "other.example.org",
      port: "443",
      call: "call_2",
      untrusted: "untrusted content seen: web_fetch call_1 (http://docs.example.org/)",
    });
    const clean = sessionNetwork({
      policy: rules,
      approver: () => port,
      record: async () => undefined,
      untrusted: view([], []),
    });
    expect(await clean("call_3").decide("new.example.org", 443)).toMatchObject({ decision: "allow" });
    expect(asked).toHaveLength(1);
  });

  it("asks for a credential-bound host even when it was contacted before", async () => {
    const { port, asked } = approver("deny");
    const network = sessionNetwork({
      policy: rules,
      approver: () => port,
      record: async () => undefined,
      untrusted: view(seen, ["registry.example.org:443"]),
      credentialBound: (host) => host === "registry.example.org",
    });
    expect(await network("call_4").decide("registry.example.org", 443)).toMatchObject({ decision: "deny" });
    expect(asked).toHaveLength(1);
  });
});

describe("a command hook's network", () => {
  const hook = { hook: "post-status" };

  it("never asks: where a command would ask, a hook's connection is denied, saying why", async () => {
    const { port, asked } = approver("allow");
    const network = sessionNetwork({ policy, approver: () => port, record: async () => undefined });
    expect(await network("call_9", undefined, hook).decide("api.example.org", 443)).toEqual({
      decision: "deny",
      rule: "net(*.example.org)",
      reason:
        "not approved: a command hook cannot ask a person (hook post-status): ask rule net(*.example.org) from user config",
      exact: false,
    });
    // Allowed by rule: no question needed.
    expect(await network("call_9", undefined, hook).decide("registry.npmjs.org", 443)).toMatchObject({
      decision: "allow",
    });
    expect(asked).toEqual([]);
    // The call's own processes still ask.
    expect(await network("call_9").decide("api.example.org", 443)).toMatchObject({ decision: "allow" });
    expect(asked).toHaveLength(1);
  });

  it("keeps an answer a person gave for the session", async () => {
    const { port, asked } = approver("allow", "session");
    const network = sessionNetwork({ policy, approver: () => port, record: async () => undefined });
    await network("call_1").decide("api.example.org", 443);
    expect(await network("call_2", undefined, hook).decide("api.example.org", 443)).toMatchObject({
      decision: "allow",
      reason: "approved: ask rule net(*.example.org) from user config",
    });
    expect(asked).toHaveLength(1);
  });

  it("after untrusted content, a new host is denied (it would ask), even for an allow rule", async () => {
    const { port, asked } = approver("allow");
    const network = sessionNetwork({
      policy: { rules: [parseRule("allow", "net(*.example.org)", "cli")] },
      approver: () => port,
      record: async () => undefined,
      untrusted: {
        untrusted: () => [{ call_id: "call_1", name: "web_fetch", provenance: "http://docs.example.org/" }],
        contacted: (target) => target === "hooks.example.org:443",
      },
    });
    const access = network("call_3", undefined, hook);
    expect(await access.decide("hooks.example.org", 443)).toMatchObject({ decision: "allow" });
    expect(await access.decide("new.example.org", 443)).toMatchObject({
      decision: "deny",
      reason:
        "not approved: a command hook cannot ask a person (hook post-status): untrusted content seen: web_fetch call_1 (http://docs.example.org/); allow rule net(*.example.org) from cli",
    });
    expect(asked).toEqual([]);
  });

  it("journals each connection and credential use under the call, naming the hook", async () => {
    const connections: ConnectionInfo[] = [];
    const uses: unknown[] = [];
    const network = sessionNetwork({
      policy,
      approver: () => undefined,
      record: async (connection) => {
        connections.push(connection);
      },
      credentials: {} as never,
      recordCredential: async (use) => {
        uses.push(use);
      },
    });
    const access = network("call_5", undefined, hook);
    access.record({
      host: "registry.npmjs.org",
      port: 443,
      decision: "allow",
      bytes_up: 1,
      bytes_down: 2,
      ms: 3,
    });
    access.credentials?.used("NPM_TOKEN", "registry.npmjs.org");
    await new Promise((resolve) => setImmediate(resolve));
    expect(connections).toEqual([
      {
        call_id: "call_5",
        hook: "post-status",
        host: "registry.npmjs.org",
        port: 443,
        decision: "allow",
        bytes_up: 1,
        bytes_down: 2,
        ms: 3,
      },
    ]);
    expect(uses).toEqual([
      { call_id: "call_5", hook: "post-status", name: "NPM_TOKEN", host: "registry.npmjs.org" },
    ]);
  });
});
