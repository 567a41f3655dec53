import { z } from "zod";
import type { ModelMessage } from "../../protocol/types.js";
import { jsonObjectSchema } from "../../shared/json.js";

const jsonObject = jsonObjectSchema;

const scriptedCall = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1),
  arguments: jsonObject,
});

/** One scripted model turn: a reply, a raw event stream (to script faults), or an error. */
export const scriptedTurnSchema = z.union([
  z.strictObject({
    text: z.string().default(""),
    calls: z.array(scriptedCall).default([]),
    /** Token counts to report as the provider would (default 0): scripts can exercise calibration. */
    usage: z
      .strictObject({
        input_tokens: z.number().int().nonnegative().optional(),
        output_tokens: z.number().int().nonnegative().optional(),
      })
      .optional(),
  }),
  z.strictObject({ stream: z.array(z.unknown()) }),
  z.strictObject({
    error: z.strictObject({
      kind: z.enum(["transient", "fatal"]),
      message: z.string().default("scripted error"),
    }),
  }),
]);

export const scriptFileSchema = z.strictObject({ replies: z.array(scriptedTurnSchema) });

export type ScriptedTurn = z.infer<typeof scriptedTurnSchema>;

/**
 * A programmable script: receives the projected messages and the step index, and returns (or
 * resolves to) a turn, or returns an iterable of raw stream events.
 */
export type ScriptFunction = (
  messages: readonly ModelMessage[],
  step: number,
) => unknown | Promise<unknown> | AsyncIterable<unknown> | Iterable<unknown>;

export class ScriptError extends Error {
  override readonly name = "ScriptError";
}

export function parseScriptFile(text: string, label: string): ScriptedTurn[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ScriptError(`${label}: not valid JSON (${(error as Error).message})`);
  }
  const parsed = checked(scriptFileSchema, raw, label);
  if (!parsed.success) {
    throw new ScriptError(`${label}: not a harness script: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data.replies;
}

export function parseTurn(value: unknown, label: string): ScriptedTurn {
  const parsed = checked(scriptedTurnSchema, value, label);
  if (!parsed.success)
    throw new ScriptError(`${label}: invalid scripted reply: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * Schema checks recurse into argument values: JSON nested thousands deep overflows the stack
 * (RangeError), which is the script's fault and reported as such, never as a crash.
 */
function checked<T extends z.ZodType>(schema: T, value: unknown, label: string) {
  try {
    return schema.safeParse(value);
  } catch (error) {
    const name = error instanceof Error ? error.name : typeof error;
    throw new ScriptError(`${label}: cannot be checked (${name}: nested too deeply?)`);
  }
}
