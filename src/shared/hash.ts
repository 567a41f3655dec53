import { hash } from "node:crypto";
import canonicalize from "canonicalize";

/** SHA-256 of raw bytes or a UTF-8 string, lower-case hex. */
export function sha256Hex(data: string | Uint8Array): string {
  // crypto.hash is the one-shot form (Node >= 20.12): no Hash object per call on hot paths.
  return hash("sha256", data, "hex");
}

/** RFC 8785 (JCS) canonical JSON text of a value. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("value has no canonical JSON form");
  return text;
}

/** SHA-256 of the RFC 8785 canonical form: the identity of a JSON value. */
export function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
