import { isIP } from "node:net";

/** Loopback addresses and `localhost`: reachable only from this machine. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/** Which `Host` and `Origin` values a request may carry (all lower case, exact). */
export interface RequestOrigins {
  hosts: ReadonlySet<string>;
  origins: ReadonlySet<string>;
}

/**
 * What the server answers to, DNS-rebinding protection: a page on another site that makes its
 * own name resolve to this machine sends its own name as `Host` and its own origin as `Origin`,
 * so only the address the server is bound to (with the loopback names when it is loopback) and
 * the names the operator added are accepted, each with the server's port; a browser request is
 * accepted only from the server's own origins and the origins the operator added.
 */
export function requestOrigins(
  bound: { host: string; port: number },
  extra: { hosts?: readonly string[]; origins?: readonly string[] } = {},
): RequestOrigins {
  const names = new Set<string>([hostName(bound.host)]);
  if (isLoopback(bound.host)) for (const name of ["localhost", "127.0.0.1", "[::1]"]) names.add(name);
  const hosts = new Set<string>();
  for (const name of names) {
    hosts.add(`${name}:${bound.port}`);
    if (bound.port === 80) hosts.add(name);
  }
  for (const given of extra.hosts ?? []) hosts.add(withPort(given.toLowerCase(), bound.port));
  const origins = new Set<string>();
  for (const host of hosts) {
    const origin = originOf(`http://${host}`);
    if (origin !== undefined) origins.add(origin);
  }
  for (const given of extra.origins ?? []) {
    const origin = originOf(given);
    if (origin !== undefined) origins.add(origin);
  }
  return { hosts, origins };
}

/** Why a request must be refused (403) before anything reads it, or undefined when it may go on. */
export function refusal(
  host: string | undefined,
  origin: string | undefined,
  allowed: RequestOrigins,
): string | undefined {
  if (host === undefined || !allowed.hosts.has(host.toLowerCase()))
    return `the Host header ${host === undefined ? "is missing" : `"${host}" is not one this server answers to`}`;
  if (origin === undefined) return undefined;
  const normalized = originOf(origin);
  if (normalized === undefined || !allowed.origins.has(normalized))
    return `the Origin "${origin}" is not allowed (the server's own origins and --allow-origin ones are)`;
  return undefined;
}

/** `scheme://host[:port]` of an origin, lower case, or undefined for `null` or anything unparsable. */
export function originOf(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.origin === "null") return undefined;
    return url.origin.toLowerCase();
  } catch {
    return undefined;
  }
}

/** `NAME:PORT` of an operator's `--allow-host` value (given with or without a port). */
function withPort(value: string, port: number): string {
  if (value.startsWith("[")) return value.includes("]:") ? value : `${value}:${port}`;
  if (value.split(":").length === 2) return value;
  return `${hostName(value)}:${port}`;
}

function hostName(host: string): string {
  const bare = host.toLowerCase().replace(/^\[|\]$/g, "");
  return bare.includes(":") ? `[${bare}]` : bare;
}
