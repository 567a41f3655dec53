import { type ParseArgsConfig, parseArgs } from "node:util";
import { MAX_CONTEXT_TOKENS } from "../providers/context-window.js";
import { UsageError } from "./usage-error.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Strict parsing: unknown flags and missing values are usage errors, not surprises. */
type Parsed<T extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>
>;

export function parse<T extends Options>(args: string[], options: T): Parsed<T> {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ""));
  }
}

export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(value))
    throw new UsageError(`${flag} must be a positive integer, got "${value}"`);
  return Number(value);
}

export function oneOf<T extends string>(
  value: string | undefined,
  flag: string,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${flag} must be one of ${allowed.join(", ")}; got "${value}"`);
  }
  return value as T;
}

/** A token count (`--context-window`): a positive whole number no larger than any model's window. */
export function tokenCount(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const count = /^[0-9]{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!(count >= 1 && count <= MAX_CONTEXT_TOKENS)) {
    throw new UsageError(
      `${flag} must be a whole number of tokens from 1 to ${MAX_CONTEXT_TOKENS}, got "${value}"`,
    );
  }
  return count;
}
