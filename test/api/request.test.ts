import { describe, expect, it } from "vitest";
import { ErrorCode, METHODS, NOTIFICATIONS, parseRequest } from "../../src/api/index.js";

const request = (method: string, params?: unknown, id: unknown = 1) => ({
  jsonrpc: "2.0",
  id,
  method,
  ...(params === undefined ? {} : { params }),
});

describe("parseRequest", () => {
  it("accepts a known method with valid params, narrowing params by method", () => {
    const parsed = parseRequest(request("turn/start", { session: "s1", input: "go on" }, "a"));
    expect(parsed).toEqual({
      kind: "request",
      request: { jsonrpc: "2.0", id: "a", method: "turn/start", params: { session: "s1", input: "go on" } },
    });
  });

  it("treats omitted params as {}", () => {
    expect(parseRequest(request("shutdown"))).toMatchObject({ kind: "request", request: { params: {} } });
    expect(parseRequest(request("initialize"))).toMatchObject({ kind: "request", request: { params: {} } });
  });

  it("answers a batch, a non-object and a malformed envelope with -32600", () => {
    for (const value of [[request("shutdown")], 42, "x", null]) {
      const parsed = parseRequest(value);
      expect(parsed).toMatchObject({
        kind: "error",
        response: { id: null, error: { code: ErrorCode.InvalidRequest } },
      });
    }
    expect(parseRequest([])).toMatchObject({
      response: { error: { message: "invalid request: batches are not supported" } },
    });
    expect(parseRequest({ jsonrpc: "1.0", id: 3, method: "shutdown" })).toMatchObject({
      response: { id: 3, error: { code: -32600 } },
    });
    expect(parseRequest({ jsonrpc: "2.0", id: 3, method: 7 })).toMatchObject({
      response: { id: 3, error: { code: -32600 } },
    });
    expect(parseRequest({ jsonrpc: "2.0", id: 1.5, method: "shutdown" })).toMatchObject({
      response: { id: null, error: { code: -32600 } },
    });
    expect(parseRequest(request("shutdown", [1]))).toMatchObject({
      response: { id: 1, error: { code: -32600 } },
    });
  });

  it("answers an unknown method with -32601, an Object prototype key included", () => {
    expect(parseRequest(request("toString", {}, 2))).toMatchObject({
      response: { id: 2, error: { code: -32601 } },
    });
    expect(parseRequest(request("session/explode", {}, 9))).toMatchObject({
      kind: "error",
      response: {
        id: 9,
        error: { code: ErrorCode.MethodNotFound, message: "method not found: session/explode" },
      },
    });
  });

  it("answers bad params (a missing field, an unknown key, a wrong option) with -32602 and short issues", () => {
    const missing = parseRequest(request("turn/start", { session: "s1" }));
    expect(missing).toMatchObject({
      kind: "error",
      response: { id: 1, error: { code: ErrorCode.InvalidParams, data: { issues: [{ path: "input" }] } } },
    });
    const unknownKey = parseRequest(request("session/verify", { session: "s", extra: 1 }));
    expect(unknownKey).toMatchObject({ response: { error: { code: -32602 } } });
    const unknownOption = parseRequest(
      request("session/start", { workspace: "/w", options: { script: "s.json", turbo: true } }),
    );
    expect(unknownOption).toMatchObject({ response: { error: { code: -32602 } } });
    const badDecision = parseRequest(request("approval/respond", { approval_id: "s:4", decision: "maybe" }));
    expect(badDecision).toMatchObject({
      response: { error: { code: -32602, data: { issues: [{ path: "decision" }] } } },
    });
  });

  it("keeps the issues short however bad the params are", () => {
    const options = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, "x".repeat(10_000)]));
    const parsed = parseRequest(request("session/start", { workspace: 5, options }));
    if (parsed.kind !== "error") throw new Error("expected an error");
    expect(JSON.stringify(parsed.response).length).toBeLessThan(4000);
  });

  it("takes a message without id as a client notification, which is never answered", () => {
    expect(parseRequest({ jsonrpc: "2.0", method: "whatever" })).toEqual({
      kind: "notification",
      method: "whatever",
    });
  });
});

describe("the protocol's schemas", () => {
  it("define every method and notification of version 1", () => {
    expect(Object.keys(METHODS).sort()).toEqual(
      [
        "initialize",
        "session/start",
        "session/list",
        "session/read",
        "session/verify",
        "session/subscribe",
        "session/unsubscribe",
        "turn/start",
        "turn/steer",
        "turn/interrupt",
        "approval/list",
        "approval/respond",
        "session/fork",
        "session/compact",
        "shutdown",
      ].sort(),
    );
    expect(Object.keys(NOTIFICATIONS).sort()).toEqual(
      [
        "turn/started",
        "item/started",
        "item/delta",
        "item/completed",
        "turn/completed",
        "approval/requested",
        "approval/resolved",
        "session/record",
        "session/status",
        "agent/record",
      ].sort(),
    );
  });

  it("accept every run option under its wire name", () => {
    const options = {
      script: "s.json",
      provider: "openai",
      model: "m",
      base_url: "http://127.0.0.1:1",
      profile: "p",
      write: true,
      shell: false,
      tools: "coding",
      accept: ["npm test"],
      propose: false,
      max_model_requests: 3,
      max_tool_calls: 10,
      approval_timeout_ms: 1000,
    };
    expect(METHODS["session/start"].params.parse({ workspace: "/w", goal: "g", options })).toEqual({
      workspace: "/w",
      goal: "g",
      options,
    });
  });
});

describe("SESSION:SEQ ids", () => {
  it("round-trip, the seq being what follows the last colon", async () => {
    const { parseSessionSeqId, sessionSeqId } = await import("../../src/api/index.js");
    expect(sessionSeqId("s1", 42)).toBe("s1:42");
    expect(parseSessionSeqId("a:b:7")).toEqual({ session: "a:b", seq: 7 });
    // The journal's first record (session.started) has seq 0.
    expect(parseSessionSeqId("s1:0")).toEqual({ session: "s1", seq: 0 });
    for (const bad of ["", "s1", ":3", "s1:", "s1:00", "s1:07", "s1:-1", "s1:1.5", "s1:99999999999999999"]) {
      expect(parseSessionSeqId(bad)).toBeUndefined();
    }
  });
});
