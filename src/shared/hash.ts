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

/** Thrown inside sortedCopy for a value the copy cannot stand for; the walk then decides. */
const NOT_PLAIN = Symbol("not plain JSON");
/** Deeper than this, the copy gives up (the walk reports a cycle or goes on). */
const COPY_MAX_DEPTH = 256;

/**
 * A fresh copy of a plain JSON value (plain objects, arrays, strings, finite numbers, booleans,
 * null) with every object's keys inserted in canonical order, undefined members left out and
 * -0 written as 0: what JSON.parse of its canonical text would give. `digitKeys.seen` is set
 * when a key starts with a digit, since the engine lists integer-like keys first whatever the
 * insertion order. Throws NOT_PLAIN for anything else (a Date, a class instance, a function, a
 * `__proto__` key, a cycle), which the key-by-key walk handles.
 */
function sortedCopy(value: unknown, depth: number, digitKeys: { seen: boolean }): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw NOT_PLAIN;
      return value === 0 ? 0 : value;
    case "object":
      break;
    default:
      throw NOT_PLAIN;
  }
  if (value === null) return null;
  if (depth > COPY_MAX_DEPTH) throw NOT_PLAIN;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      out[i] = item === undefined ? null : sortedCopy(item, depth + 1, digitKeys);
    }
    return out;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) throw NOT_PLAIN;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  let ordered = true;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (key === "__proto__") throw NOT_PLAIN;
    const first = key.charCodeAt(0);
    if (first >= 0x30 && first <= 0x39) digitKeys.seen = true;
    if (i > 0 && (keys[i - 1] as string) > key) ordered = false;
  }
  if (!ordered) keys.sort();
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const member = object[key];
    if (member !== undefined) out[key] = sortedCopy(member, depth + 1, digitKeys);
  }
  return out;
}

/** A value's canonical text, and a fresh copy equal to what parsing that text gives. */
export interface CanonicalForm {
  text: string;
  value: unknown;
}

/**
 * The canonical form of plain JSON (every journal record), or undefined for anything else. The
 * copy is built with its keys in canonical order and JSON.stringify writes the text: the native
 * serializer over one fresh copy costs less than the key-by-key walk (and, for callers that keep
 * the copy, the parse it replaces).
 */
function plainForm(value: unknown): CanonicalForm | undefined {
  const digitKeys = { seen: false };
  let copy: unknown;
  try {
    copy = sortedCopy(value, 0, digitKeys);
  } catch (error) {
    if (error === NOT_PLAIN) return undefined;
    throw error;
  }
  // Integer-like keys: the engine enumerates them first, so only the walk puts them in order.
  const text = digitKeys.seen ? walkedText(copy) : JSON.stringify(copy);
  if (text.includes("\\ud") && holdsLoneSurrogate(copy)) {
    throw new TypeError("a lone surrogate has no canonical JSON form");
  }
  return { text, value: copy };
}

/** The key-by-key walk: the reference, for every value (toJSON, cycles, class instances). */
function walkedText(value: unknown): string {
  const text = canonicalText(value, []);
  if (text === undefined) throw new TypeError("value has no canonical JSON form");
  if (text.includes("\\ud") && holdsLoneSurrogate(value)) {
    throw new TypeError("a lone surrogate has no canonical JSON form");
  }
  return text;
}

/**
 * RFC 8785 canonical text of a value together with an independent copy of it, as JSON.parse of
 * the text would return it. Throws for a value with no canonical text.
 */
export function canonicalForm(value: unknown): CanonicalForm {
  const plain = plainForm(value);
  if (plain) return plain;
  const text = walkedText(value);
  return { text, value: JSON.parse(text) };
}

/** RFC 8785 (JCS) canonical JSON text of a value. Throws for a value with no such text. */
export function canonicalJson(value: unknown): string {
  return plainForm(value)?.text ?? walkedText(value);
}
/** SHA-256 of the RFC 8785 canonical form: the identity of a JSON value. */
export function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
