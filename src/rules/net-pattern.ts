import { isIP } from "node:net";

/**
 * The pattern of a network rule, `net(HOST[:PORT])`: which destinations a rule names. HOST is a
 * DNS name whose labels may be `*` (one or more labels: `*.pythonhosted.org` covers
 * `files.pythonhosted.org` and `a.b.pythonhosted.org`, not `pythonhosted.org`), an IPv4 address,
 * or an IPv6 address in brackets. No port means any port. Names compare lowercased, without a
 * trailing dot, so two spellings of one host meet the same rules.
 */
/** The rule tool name of network rules: only rules whose tool is literally this decide connections. */
export const NET_TOOL = "net";

export interface NetPattern {
  /** Canonical host: lowercased, no trailing dot, IPv6 without brackets. */
  host: string;
  /** Undefined: any port. */
  port?: number;
  /** Whether the host has a `*` label: such a rule never names a host "exactly". */
  wildcard: boolean;
}

/** A host and port a client asked for, canonical (see `canonicalHost`). */
export interface NetTarget {
  host: string;
  port: number;
}

const LABEL = /^(?:\*|[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)$/;
const MAX_HOST_LENGTH = 253;

/** Parse a pattern; a string saying what is wrong when it does not parse. */
export function parseNetPattern(text: string): NetPattern | string {
  let hostPart: string;
  let portPart: string | undefined;
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close === -1) return "an IPv6 address needs its closing ']'";
    hostPart = text.slice(1, close);
    const rest = text.slice(close + 1);
    if (rest !== "" && !rest.startsWith(":")) return "only ':PORT' may follow ']'";
    portPart = rest === "" ? undefined : rest.slice(1);
    if (isIP(hostPart) !== 6) return `${hostPart} is not an IPv6 address`;
  } else {
    const colon = text.lastIndexOf(":");
    if (colon !== -1 && text.indexOf(":") !== colon) return "write an IPv6 address in brackets: [::1]:443";
    hostPart = colon === -1 ? text : text.slice(0, colon);
    portPart = colon === -1 ? undefined : text.slice(colon + 1);
  }
  let port: number | undefined;
  if (portPart !== undefined && portPart !== "*") {
    const parsed = parsePort(portPart);
    if (parsed === undefined) return `the port must be a number from 1 to 65535 or '*', got "${portPart}"`;
    port = parsed;
  }
  const host = canonicalHost(hostPart);
  if (host === undefined)
    return `"${hostPart}" is not a host name, an IP address or a pattern like *.example.org`;
  const wildcard = host.split(".").includes("*");
  return { host, ...(port !== undefined ? { port } : {}), wildcard };
}

/** A port from its decimal text, or undefined. */
export function parsePort(text: string): number | undefined {
  if (!/^[0-9]{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/**
 * A host as rules compare it: lowercased, without a trailing dot or IPv6 brackets; undefined for
 * anything that is neither a DNS name (labels of letters, digits, '-' and '_'; `*` labels are
 * allowed for patterns) nor an IP address.
 */
export function canonicalHost(raw: string): string | undefined {
  let host = raw.toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  if (isIP(host) === 6) return host;
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (host === "" || host.length > MAX_HOST_LENGTH) return undefined;
  if (isIP(host) === 4) return host;
  return host.split(".").every((label) => LABEL.test(label)) ? host : undefined;
}

/** The rule text of a pattern: `host`, `host:port`, `[v6]:port`. */
export function formatNetTarget(host: string, port?: number): string {
  const shown = isIP(host) === 6 ? `[${host}]` : host;
  return port === undefined ? shown : `${shown}:${port}`;
}

const compiled = new Map<string, RegExp>();

/** Whether a pattern covers a canonical target. A `*` label stands for one or more labels. */
export function netPatternMatches(pattern: NetPattern, target: NetTarget): boolean {
  if (pattern.port !== undefined && pattern.port !== target.port) return false;
  if (!pattern.wildcard) return pattern.host === target.host;
  if (isIP(target.host) !== 0) return false;
  let regex = compiled.get(pattern.host);
  if (regex === undefined) {
    const body = pattern.host
      .split(".")
      .map((label) => (label === "*" ? "[^.]+(?:\\.[^.]+)*" : label.replaceAll("-", "\\-")))
      .join("\\.");
    regex = new RegExp(`^${body}$`);
    compiled.set(pattern.host, regex);
  }
  return regex.test(target.host);
}
