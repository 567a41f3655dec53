import { describe, expect, it } from "vitest";
import { ProviderError } from "../../src/providers/provider.js";
import { ERROR_CODES, TRANSIENT_ERROR_CODES } from "../../src/tools/errors.js";

describe("the error-code tables", () => {
  it("derive the runtime's own retries from the tool table: transient codes are retryable ones", () => {
    expect([...TRANSIENT_ERROR_CODES]).toEqual(["IO_ERROR", "MCP_CONNECTION_LOST"]);
    for (const code of TRANSIENT_ERROR_CODES)
      expect(ERROR_CODES[code as keyof typeof ERROR_CODES].retryable).toBe(true);
    const retryable = Object.entries(ERROR_CODES).flatMap(([code, info]) => (info.retryable ? [code] : []));
    expect(retryable.sort()).toEqual([
      "CANCELLED",
      "FETCH_FAILED",
      "FILE_BUSY",
      "IO_ERROR",
      "MCP_CONNECTION_LOST",
      "MCP_UNAVAILABLE",
      "TIMEOUT",
    ]);
  });

  it("say per provider code whether waiting may help, unless the thrower knows better", () => {
    const retryable = (code: ConstructorParameters<typeof ProviderError>[0]) =>
      new ProviderError(code, "m").retryable;
    for (const code of [
      "RATE_LIMIT",
      "SERVER",
      "OVERLOADED",
      "TRANSPORT",
      "TIMEOUT",
      "EMPTY_RESPONSE",
    ] as const) {
      expect(retryable(code)).toBe(true);
    }
    for (const code of [
      "AUTH",
      "QUOTA",
      "CONTEXT_WINDOW_EXCEEDED",
      "INVALID_REQUEST",
      "NOT_FOUND",
      "SCRIPT_ERROR",
      "CANCELLED",
    ] as const) {
      expect(retryable(code)).toBe(false);
    }
    expect(new ProviderError("SERVER", "m", { retryable: false }).retryable).toBe(false);
  });
});
