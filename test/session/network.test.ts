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
