/**
 * Endpoint helpers shared by every network provider: what part of a URL may be recorded,
 * whether an endpoint is on this machine (no key required), and a fetch that never sends an
 * empty credential header and bounds what a response may make harness hold.
 */

import { boundedResponse } from "../shared/bounded-stream.js";
import { MAX_SSE_EVENT_SIZE, providerTooLarge } from "./event-size.js";

const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** Parse an endpoint URL; only http and https are accepted. */
export function parseEndpoint(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError("endpoint is not a valid absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`endpoint scheme ${url.protocol} is not http or https`);
  }
  return url;
}

/** True for endpoints on this machine: 127.0.0.1, localhost and ::1. */
export function isLoopbackUrl(raw: string): boolean {
  try {
    const host = parseEndpoint(raw).hostname.toLowerCase();
    return LOOPBACK_HOSTS.has(host) || host.endsWith(".localhost");
  } catch {
    return false;
  }
}

/**
 * The recordable form of an endpoint: scheme, host, port and path only. User info, query and
 * fragment are dropped because they are where credentials end up in practice.
 */
export function publicUrl(raw: string): string {
  const url = parseEndpoint(raw);
  const path = url.pathname.replace(/\/+$/, "");
  return `${url.protocol}//${url.host}${path}`;
}

/**
 * The settings an AI SDK provider factory needs to reach `baseUrl`: the key (empty for loopback
 * endpoints, whose credential header is then dropped) and that fetch.
 */
export function sdkConnection(
  baseUrl: string,
  options: { apiKey?: string; fetch?: typeof fetch },
): { baseURL: string; apiKey: string; fetch: typeof fetch } {
  return {
    baseURL: baseUrl,
    apiKey: options.apiKey ?? "",
    fetch: fetchWithoutEmptyCredentials(options.fetch),
  };
}

/**
 * Wrap fetch so that requests made without a key (loopback endpoints) carry no credential
 * header at all, instead of the AI SDK's `Bearer ` / empty `x-api-key`.
 */
function fetchWithoutEmptyCredentials(base: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    if (init?.headers === undefined)
      return boundedResponse(await base(input, init), MAX_SSE_EVENT_SIZE, providerTooLarge);
    const headers = new Headers(init.headers);
    const authorization = headers.get("authorization");
    if (authorization !== null && /^bearer\s*$/i.test(authorization.trim())) headers.delete("authorization");
    if (headers.get("x-api-key") === "") headers.delete("x-api-key");
    return boundedResponse(await base(input, { ...init, headers }), MAX_SSE_EVENT_SIZE, providerTooLarge);
  };
}

/** Default endpoints of the vendor APIs (kept here, light, so configs need not load the SDKs). */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com/v1";
