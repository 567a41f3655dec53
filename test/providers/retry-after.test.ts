import { describe, expect, it } from "vitest";
import { parseRetryAfter } from "../../src/providers/retry-after.js";

const NOW = Date.parse("2026-01-01T00:00:00Z");

describe("parseRetryAfter", () => {
  it("reads delta-seconds, fractions, HTTP dates and retry-after-ms", () => {
    expect(parseRetryAfter({ "Retry-After": "7" }, NOW)).toBe(7000);
    expect(parseRetryAfter({ "retry-after": "0.5" }, NOW)).toBe(500);
    expect(parseRetryAfter({ "retry-after": new Date(NOW + 30_000).toUTCString() }, NOW)).toBe(30_000);
    expect(parseRetryAfter({ "retry-after": new Date(NOW - 5_000).toUTCString() }, NOW)).toBe(0);
    expect(parseRetryAfter(new Headers({ "retry-after-ms": "1250", "retry-after": "9" }), NOW)).toBe(1250);
  });

  it("ignores absent and unparseable values", () => {
    expect(parseRetryAfter({}, NOW)).toBeUndefined();
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter({ "retry-after": "soon" }, NOW)).toBeUndefined();
    expect(parseRetryAfter({ "retry-after": "-3" }, NOW)).toBeUndefined();
  });
});
