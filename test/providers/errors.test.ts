import { APICallError } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { classifyFailure, normalizeProviderError, redactSecrets } from "../../src/providers/errors.js";
import { fixture } from "./helpers/server.js";

const body = (name: string): unknown => JSON.parse(fixture(`errors/${name}.body`).toString("utf8"));
const classify = (status: number | undefined, payload: unknown, headers: Record<string, string> = {}) =>
  classifyFailure({ provider: "p", status, body: payload, headers, secrets: [] });

describe("classifyFailure on recorded bodies", () => {
  it.each([
    [400, "anthropic-400-invalid-request", "INVALID_REQUEST", false],
    [401, "anthropic-401-authentication-error", "AUTH", false],
    [429, "anthropic-429-rate-limit", "RATE_LIMIT", true],
    [529, "anthropic-529-overloaded", "OVERLOADED", true],
    [529, "anthropic-529-overloaded-with-request-id", "OVERLOADED", true],
    [400, "openai-400-context-length-exceeded", "CONTEXT_WINDOW_EXCEEDED", false],
    [401, "openai-401-invalid-api-key", "AUTH", false],
    [404, "openai-404-model-not-found", "NOT_FOUND", false],
    [429, "openai-429-rate-limit-tokens", "RATE_LIMIT", true],
  ])("%i %s -> %s", (status, name, code, retryable) => {
    const error = classify(status, body(name));
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(retryable);
    expect(error.status).toBe(status);
  });

  it("uses code and message, not status alone", () => {
    expect(
      classify(429, {
        error: {
          message: "You exceeded your current quota",
          type: "insufficient_quota",
          code: "insufficient_quota",
        },
      }).code,
    ).toBe("QUOTA");
    expect(
      classify(400, {
        error: { type: "invalid_request_error", message: "Your credit balance is too low to access the API" },
      }).code,
    ).toBe("QUOTA");
    expect(
      classify(400, {
        type: "error",
        error: {
          type: "invalid_request_error",
          message: "prompt is too long: 201000 tokens > 200000 maximum",
        },
      }).code,
    ).toBe("CONTEXT_WINDOW_EXCEEDED");
    expect(
      classify(413, {
        type: "error",
        error: { type: "request_too_large", message: "Request exceeds the maximum size" },
      }).code,
    ).toBe("CONTEXT_WINDOW_EXCEEDED");
    expect(classify(503, { error: { message: "The engine is currently overloaded" } }).code).toBe(
      "OVERLOADED",
    );
    expect(classify(500, { error: { message: "oops" } }).code).toBe("SERVER");
    expect(classify(504, undefined).code).toBe("TIMEOUT");
    expect(classify(403, { error: { type: "permission_error", message: "no access" } }).code).toBe("AUTH");
    expect(
      classify(422, { object: "error", message: "bad field", type: "BadRequestError", code: 422 }).code,
    ).toBe("INVALID_REQUEST");
    expect(classify(404, { error: "model 'llama9' not found, try pulling it first" }).code).toBe("NOT_FOUND");
  });

  it("classifies error objects from inside a 200 stream without inventing a status", () => {
    const error = classify(undefined, { error: { type: "overloaded_error", message: "Overloaded" } });
    expect(error).toMatchObject({ code: "OVERLOADED", providerCode: "overloaded_error" });
    expect(error.status).toBeUndefined();
    expect(classify(undefined, { error: { code: 502, message: "upstream failed" } }).code).toBe("SERVER");
    expect(classify(undefined, { error: { message: "mystery" } }).code).toBe("SERVER");
  });

  it("takes the request id from x-request-id, request-id or the body, and Retry-After", () => {
    expect(classify(529, body("anthropic-529-overloaded"), { "request-id": "req_h" }).requestId).toBe(
      "req_h",
    );
    expect(classify(404, {}, { "X-Request-Id": "req_x" }).requestId).toBe("req_x");
    expect(classify(529, body("anthropic-529-overloaded-with-request-id")).requestId).toBe(
      "req_011CZAY8xEUqbHSEE3BdFtMh",
    );
    expect(classify(429, {}, { "retry-after-ms": "250" }).retryAfterMs).toBe(250);
  });
});

describe("secrets never leave in errors", () => {
  const key = "sk-canary-DO-NOT-LEAK-1234";
  it("redacts exact keys, key-shaped tokens and bearer values", () => {
    const dirty = `key ${key}; other sk-proj-abcdEFGH1234; header Bearer abc.def; Incorrect API key provided: xx-123`;
    const clean = redactSecrets(dirty, [key]);
    expect(clean).not.toContain("DO-NOT-LEAK");
    expect(clean).not.toContain("abcdEFGH1234");
    expect(clean).not.toContain("abc.def");
    expect(clean).not.toContain("xx-123");
  });

  it("an APICallError carrying the key in body and cause yields a clean ProviderError", () => {
    const apiError = new APICallError({
      message: `failed with ${key}`,
      url: "http://127.0.0.1/v1",
      requestBodyValues: { key },
      statusCode: 401,
      responseBody: JSON.stringify({ error: { message: `bad key ${key}`, code: "invalid_api_key" } }),
      cause: new Error(key),
    });
    const error = normalizeProviderError(apiError, { provider: "p", secrets: [key] });
    expect(error.code).toBe("AUTH");
    for (const surface of [error.message, JSON.stringify(error), String(error), error.stack ?? ""]) {
      expect(surface).not.toContain(key);
    }
    expect(Object.keys(error)).not.toContain("cause");
  });
});

describe("normalizeProviderError for non-HTTP failures", () => {
  it("network failures are TRANSPORT; aborts are CANCELLED or TIMEOUT; unknown bugs are not retried", () => {
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    expect(
      normalizeProviderError(new TypeError("terminated", { cause: reset }), { provider: "p", secrets: [] })
        .code,
    ).toBe("TRANSPORT");
    expect(
      normalizeProviderError(new Error("x"), { provider: "p", secrets: [], abortedBy: "caller" }),
    ).toMatchObject({ code: "CANCELLED", retryable: false });
    expect(
      normalizeProviderError(new Error("x"), { provider: "p", secrets: [], abortedBy: "timeout" }),
    ).toMatchObject({ code: "TIMEOUT", retryable: true });
    expect(normalizeProviderError(new RangeError("bug"), { provider: "p", secrets: [] })).toMatchObject({
      code: "SERVER",
      retryable: false,
    });
  });
});
