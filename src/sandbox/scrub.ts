import { looksLikeSecret } from "./env.js";

/**
 * Secret scrubbing: the values of credential-looking variables in harness's own environment are
 * replaced in a process's output before that output reaches a result, an artifact, the journal
 * or the terminal. The environment filter keeps secrets away from commands; this covers a secret
 * that reaches the output some other way (a file holding the key, a config that embeds it).
 */

/** Values shorter than this are not treated as secrets: replacing `1` or `yes` everywhere would garble output. */
export const MIN_SECRET_LENGTH = 8;

export interface Secret {
  name: string;
  value: Buffer;
}

/**
 * The secrets to scrub: every variable of `environment` whose name looks like a credential, plus
 * `extraNames` (e.g. the provider's key variable, whatever its name). Longest first, so a secret
 * that contains another is replaced whole.
 */
export function secretsOf(
  environment: Readonly<Record<string, string | undefined>>,
  extraNames: readonly string[] = [],
): Secret[] {
  const extra = new Set(extraNames);
  const byValue = new Map<string, string>();
  for (const [name, value] of Object.entries(environment)) {
    if (value === undefined || value.length < MIN_SECRET_LENGTH) continue;
    if (!looksLikeSecret(name) && !extra.has(name)) continue;
    if (!byValue.has(value)) byValue.set(value, name);
  }
  return [...byValue]
    .map(([value, name]) => ({ name, value: Buffer.from(value, "utf8") }))
    .sort((a, b) => b.value.length - a.value.length);
}

/** What replaces a secret: names the variable (names are not secret), never the value. */
function redaction(name: string): string {
  return `[redacted:${name}]`;
}

/** Every occurrence of every secret in `bytes`, replaced. */
function scrubBytes(bytes: Buffer, secrets: readonly Secret[]): Buffer {
  let current = bytes;
  for (const secret of secrets) {
    let at = current.indexOf(secret.value);
    if (at < 0) continue;
    const parts: Buffer[] = [];
    const replacement = Buffer.from(redaction(secret.name), "utf8");
    let from = 0;
    while (at >= 0) {
      parts.push(current.subarray(from, at), replacement);
      from = at + secret.value.length;
      at = current.indexOf(secret.value, from);
    }
    parts.push(current.subarray(from));
    current = Buffer.concat(parts);
  }
  return current;
}

/** Turns a stream's chunks into scrubbed chunks (see OutputCapture). */
export interface ByteFilter {
  write(chunk: Buffer): Buffer;
  /** What is still held back, scrubbed: call once at the end of the stream. */
  end(): Buffer;
}

/**
 * A streaming scrubber. A secret may be split across chunks, so a chunk's end that could be the
 * start of a secret is held back until the next chunk or the end: no prefix of a secret leaves
 * early. Only such an end is held, so output a person watches live (a line ending in a newline)
 * is not delayed by the secrets it does not contain.
 */
export function secretFilter(secrets: readonly Secret[]): ByteFilter {
  const holdBack = Math.max(0, ...secrets.map((secret) => secret.value.length - 1));
  let pending = Buffer.alloc(0);
  return {
    write(chunk) {
      if (secrets.length === 0) return chunk;
      const scrubbed = scrubBytes(pending.length === 0 ? chunk : Buffer.concat([pending, chunk]), secrets);
      const held = secretStartAt(scrubbed, secrets, holdBack);
      pending = Buffer.from(scrubbed.subarray(held));
      return scrubbed.subarray(0, held);
    },
    end() {
      const rest = scrubBytes(pending, secrets);
      pending = Buffer.alloc(0);
      return rest;
    },
  };
}

/**
 * Where the earliest tail of `bytes` begins that is a proper prefix of a secret (what the next
 * chunk could complete), or `bytes.length` when no tail is. Only the last `holdBack` bytes can be.
 */
function secretStartAt(bytes: Buffer, secrets: readonly Secret[], holdBack: number): number {
  for (let at = Math.max(0, bytes.length - holdBack); at < bytes.length; at++) {
    const rest = bytes.subarray(at);
    for (const secret of secrets) {
      if (secret.value.length > rest.length && secret.value.subarray(0, rest.length).equals(rest)) return at;
    }
  }
  return bytes.length;
}
