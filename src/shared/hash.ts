import { hash } from "node:crypto";

/** SHA-256 of raw bytes or a UTF-8 string, lower-case hex. */
export function sha256Hex(data: string | Uint8Array): string {
  // crypto.hash is the one-shot form (Node >= 20.12): no Hash object per call on hot paths.
  return hash("sha256", data, "hex");
}

/** In `u` mode a surrogate pair is one code point, so this matches only a lone surrogate. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Whether any string in `value` (keys included) holds a lone surrogate. JSON.stringify writes a
 * lone surrogate as a `\udXXX` escape and nothing else as that text, except a backslash the string
 * itself holds; so this walk runs only when the canonical text contains "\\ud".
 */
function holdsLoneSurrogate(value: unknown): boolean {
  if (typeof value === "string") return LONE_SURROGATE.test(value);
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) return value.some(holdsLoneSurrogate);
  for (const [key, member] of Object.entries(value)) {
    if (LONE_SURROGATE.test(key) || holdsLoneSurrogate(member)) return true;
  }
  return false;
}

/**
 * The canonical text of one value. RFC 8785 serializes strings and numbers exactly as
 * JSON.stringify does and orders object keys by UTF-16 code units, which is Array.prototype.sort's
 * default order, so only the walk is ours. Every record the journal writes goes through here:
 * strings checked for lone surrogates only when the finished text shows one may be there, and one
 * string built per level, keep it a few times cheaper than a general library, with the same text
 * (test/journal/canonical.test.ts compares the two on generated values).
 */
function canonicalText(value: unknown, ancestors: object[]): string | undefined {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`${value} has no canonical JSON form`);
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object":
      break;
    case "undefined":
    case "symbol":
      // Left out of objects and null in arrays, as JSON.stringify does.
      return undefined;
    default:
      throw new TypeError(`a ${typeof value} has no JSON form`);
  }
  if (value === null) return "null";
  if (ancestors.includes(value)) throw new TypeError("a circular value has no JSON form");
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  ancestors.push(value);
  try {
    if (typeof toJSON === "function") return canonicalText(toJSON.call(value), ancestors);
    if (Array.isArray(value)) {
      let text = "[";
      for (let i = 0; i < value.length; i++) {
        if (i > 0) text += ",";
        text += canonicalText(value[i], ancestors) ?? "null";
      }
      return `${text}]`;
    }
    const object = value as Record<string, unknown>;
    let text = "{";
    for (const key of Object.keys(object).sort()) {
      const member = canonicalText(object[key], ancestors);
      if (member === undefined) continue;
      if (text.length > 1) text += ",";
      text += `${JSON.stringify(key)}:${member}`;
    }
    return `${text}}`;
  } finally {
    ancestors.pop();
  }
}

/** RFC 8785 (JCS) canonical JSON text of a value. Throws for a value with no such text. */
export function canonicalJson(value: unknown): string {
  const text = canonicalText(value, []);
  if (text === undefined) throw new TypeError("value has no canonical JSON form");
  if (text.includes("\\ud") && holdsLoneSurrogate(value)) {
    throw new TypeError("a lone surrogate has no canonical JSON form");
  }
  return text;
}

/** SHA-256 of the RFC 8785 canonical form: the identity of a JSON value. */
export function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
