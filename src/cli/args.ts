import { type ParseArgsConfig, parseArgs } from "node:util";
import { MAX_CONTEXT_TOKENS } from "../providers/context-window.js";
import { UsageError } from "../session/usage-error.js";
import { closest } from "../shared/suggest.js";

export type Options = NonNullable<ParseArgsConfig["options"]>;

/** Strict parsing: unknown flags and missing values are usage errors, not surprises. */
type Parsed<T extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>
>;

export function parse<T extends Options>(args: string[], options: T): Parsed<T> {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(inOurWords(error as Error & { code?: string }, options));
  }
}

/** Node's parseArgs messages, said the way the rest of harness says things, with the nearest valid flag. */
function inOurWords(error: Error & { code?: string }, options: Options): string {
  const quoted = /'([^']+)'/.exec(error.message)?.[1] ?? "";
  const flags = Object.entries(options).flatMap(([name, option]) => [
    `--${name}`,
    ...(option.short ? [`-${option.short}`] : []),
  ]);
  switch (error.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION": {
      const typed = quoted.split("=")[0] ?? quoted;
      const guess = closest(
        typed,
        flags.filter((flag) => flag.startsWith("--")),
      );
      return (
        `unknown option ${typed}${guess ? `; did you mean ${guess}?` : ""}` +
        ` (a goal that starts with '-' goes after '--', as in: -- "${typed}")`
      );
    }
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      // "Option '-w, --workspace <value>' argument missing" / "Option '--json' does not take an argument"
      const flag = /--[a-z0-9-]+/.exec(quoted)?.[0] ?? quoted;
      return error.message.includes("argument missing")
        ? `${flag} needs a value (${flag} VALUE)`
        : `${flag} is a switch and takes no value`;
    }
    default:
      return error.message.replace(/^TypeError \[[A-Z_]+\]: /, "");
  }
}

/** The long flags of an options table, for completion scripts. */
export function longFlags(options: Options): string[] {
  return Object.keys(options).map((name) => `--${name}`);
}

export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(value))
    throw new UsageError(`${flag} must be a positive integer, got "${value}"`);
  return Number(value);
}

/** An integer flag within [min, max], e.g. `--agents-depth 0`. */
export function boundedInt(
  value: string | undefined,
  flag: string,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  const n = /^[0-9]{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max))
    throw new UsageError(`${flag} must be an integer from ${min} to ${max}, got "${value}"`);
  return n;
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
