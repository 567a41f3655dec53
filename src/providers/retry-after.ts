/**
 * What a server asks of a retry: its `Retry-After` headers, read. How long to wait and whether to
 * try again at all is the one retry policy's (shared/retry-policy.ts).
 */

/** Header lookup as the AI SDK and fetch expose them (names compared case-insensitively). */
export type HeaderSource = Headers | Readonly<Record<string, string | undefined>> | undefined;

export function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (headers === undefined) return undefined;
  // Duck-typed: naming the global `Headers` would load Node's fetch implementation (undici).
  if (isHeadersObject(headers)) return headers.get(name) ?? undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

function isHeadersObject(headers: NonNullable<HeaderSource>): headers is Headers {
  return typeof (headers as { get?: unknown }).get === "function";
}

/**
 * The server's requested wait in milliseconds: `retry-after-ms` (OpenAI), else `retry-after` as
 * delta-seconds (fractions allowed) or an HTTP date. Dates in the past give 0. Unparseable
 * values give undefined, so the caller falls back to backoff.
 */
export function parseRetryAfter(headers: HeaderSource, nowMs: number = Date.now()): number | undefined {
  const ms = headerValue(headers, "retry-after-ms")?.trim();
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  const value = headerValue(headers, "retry-after")?.trim();
  if (value === undefined || value === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  // Only an IMF-fixdate style value is a date; Date.parse would read "-3" as a year.
  if (!/^[A-Za-z]{3},? /.test(value)) return undefined;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
