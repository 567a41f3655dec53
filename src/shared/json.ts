import { z } from "zod";

/** JSON values as they cross process and storage boundaries. */
export type JsonPrimitive = null | boolean | number | string;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Text that should hold a JSON object (external input): the object, or undefined when it does not. */
export function parseJsonObject(text: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `value` is a JSON value all the way down: null, a boolean, a finite number, a string,
 * or arrays and plain objects of those. A hand-written walk rather than zod's recursive `z.json()`:
 * the journal checks the JSON-valued fields of every record it appends, and zod's recursive
 * schemas pay for cycle tracking on every nested object, which measured several times slower
 * on a session's hot path. A nesting too deep to walk is not accepted.
 */
export function isJsonValue(value: unknown): value is JsonValue {
  try {
    return jsonWalk(value);
  } catch (error) {
    if (error instanceof RangeError) return false;
    throw error;
  }
}

function jsonWalk(value: unknown): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (const item of value) if (!jsonWalk(item)) return false;
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) {
        if (!Object.hasOwn(value, key)) return false;
        if (!jsonWalk((value as Record<string, unknown>)[key])) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/**
 * A JSON object as a zod schema, checked by isJsonValue (see there for why not `z.json()`).
 * It has no JSON Schema form: use it for parsing, not for schemas that are published.
 */
export const jsonObjectSchema = z.custom<JsonObject>((value) => isJsonObject(value) && isJsonValue(value), {
  message: "expected a JSON object",
});
