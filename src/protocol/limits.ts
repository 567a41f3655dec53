import { isWellFormed } from "../shared/unicode.js";

/**
 * How much model output one reply may carry. A model is untrusted input: without bounds, JSON
 * nested thousands deep overflows the stack of every recursive step after parsing (schema
 * checks, canonical hashing, journaling), and huge strings exhaust memory or the journal.
 * Sizes are in UTF-16 code units ("characters"), as the text arrives.
 */
export interface OutputLimits {
  /** Nesting depth of one call's argument JSON (objects and arrays). */
  maxDepth: number;
  /** One string (key or value) inside argument JSON, counted as sent (escapes included). */
  maxStringChars: number;
  /** One call's argument JSON text. */
  maxCallArgumentsChars: number;
  /** All argument JSON text of one reply. */
  maxReplyArgumentsChars: number;
  /** Tool calls in one reply. */
  maxCalls: number;
  /** A tool name. */
  maxNameChars: number;
  /** A tool call id. */
  maxCallIdChars: number;
  /** Text and reasoning of one reply together. */
  maxTextChars: number;
  /** Everything a stream delivers (text, reasoning, arguments, including what was dropped). */
  maxStreamChars: number;
}

const MiB = 1024 * 1024;

/**
 * Generous for real work (a 1 MiB file written in one call) and far below what breaks anything:
 * the default context budget (2M characters) would stop the next request long before.
 */
export const DEFAULT_OUTPUT_LIMITS: OutputLimits = {
  maxDepth: 64,
  maxStringChars: MiB,
  maxCallArgumentsChars: MiB,
  maxReplyArgumentsChars: 4 * MiB,
  maxCalls: 128,
  maxNameChars: 128,
  maxCallIdChars: 256,
  maxTextChars: 2 * MiB,
  maxStreamChars: 64 * MiB,
};

/**
 * Why argument JSON text breaks the depth or string limit, or undefined. One linear scan of
 * the text before it is parsed, so nothing recursive ever sees deep input. The scan tracks only
 * strings and brackets; whether the text is JSON at all is left to JSON.parse.
 */
export function scanArguments(text: string, limits: OutputLimits): string | undefined {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let stringStart = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 0x5c) escaped = true;
      else if (c === 0x22) {
        inString = false;
        if (i - stringStart > limits.maxStringChars) return stringTooLong(limits);
      }
    } else if (c === 0x22) {
      inString = true;
      stringStart = i + 1;
    } else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > limits.maxDepth) {
        return `the argument JSON is nested deeper than ${limits.maxDepth} levels`;
      }
    } else if (c === 0x5d || c === 0x7d) {
      depth -= 1;
    }
  }
  if (inString && text.length - stringStart > limits.maxStringChars) return stringTooLong(limits);
  return undefined;
}

function stringTooLong(limits: OutputLimits): string {
  return `a string in the arguments is longer than ${limits.maxStringChars} characters`;
}

/**
 * Why parsed arguments cannot be recorded, or undefined. JSON.parse turns `1e999` into
 * Infinity and `"\ud800"` into a lone surrogate; neither has a canonical JSON form, so neither
 * can be hashed or journaled. Depth is already bounded by scanArguments.
 */
export function unrecordableValue(value: unknown): string | undefined {
  if (typeof value === "number") {
    return Number.isFinite(value) ? undefined : "a number in the arguments is out of range";
  }
  if (typeof value === "string") {
    return isWellFormed(value) ? undefined : "a string in the arguments has a lone UTF-16 surrogate";
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = unrecordableValue(item);
      if (problem) return problem;
    }
    return undefined;
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (!isWellFormed(key)) return "a key in the arguments has a lone UTF-16 surrogate";
      const problem = unrecordableValue(item);
      if (problem) return problem;
    }
  }
  return undefined;
}
