import { z } from "zod";
import type { ModelMessage } from "../../protocol/types.js";
import { AGENT_LABEL_RULE, isAgentLabel, MAX_AGENT_DEPTH } from "../../shared/agent-label.js";
import { isJsonObject, isJsonValue, jsonObjectSchema } from "../../shared/json.js";
import { ScriptError } from "./script-error.js";

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

export type ScriptedTurn = z.infer<typeof scriptedTurnSchema>;

/** A script file as parsed: its replies, and each sub-agent's own script under its label. */
interface ScriptFileNode {
  replies: ScriptedTurn[];
  agents?: Record<string, ScriptFileNode> | undefined;
}

/** Each key of `agents` must be a label; the message names the key (a key schema's would not). */
function checkLabels(agents: Record<string, unknown>, context: z.RefinementCtx): void {
  for (const key of Object.keys(agents)) {
    if (!isAgentLabel(key)) {
      const shown = JSON.stringify(key.slice(0, 80));
      context.addIssue({
        code: "custom",
        message: `invalid sub-agent label ${shown}: ${AGENT_LABEL_RULE}`,
        path: [key],
      });
    }
  }
}

/**
 * `{"replies": [...], "agents": {"LABEL": {"replies": [...], "agents": {...}}}}`: the replies of
 * the session the script is given to, and under `agents` those of each sub-agent it starts, by
 * label, as deep as sub-agents go. Strict at every level.
 */
export const scriptFileSchema: z.ZodType<ScriptFileNode, unknown> = z.lazy(() =>
  z.strictObject({
    replies: z.array(scriptedTurnSchema),
    agents: z.record(z.string(), scriptFileSchema).superRefine(checkLabels).optional(),
  }),
);

/** A parsed script: the replies it plays, and the script of each sub-agent by label. */
export interface ScriptTree {
  readonly replies: readonly ScriptedTurn[];
  readonly agents: ReadonlyMap<string, ScriptTree>;
}

/**
 * A programmable script: receives the projected messages, the step index and the sub-agent path
 * of the session asking ("" for the session the script was given to, "a/b" for the sub-agent b
 * its sub-agent a started), and returns (or resolves to) a turn, or returns an iterable of raw
 * stream events. A function that takes two arguments answers every session the same way.
 */
export type ScriptFunction = (
  messages: readonly ModelMessage[],
  step: number,
  agent: string,
) => unknown | Promise<unknown> | AsyncIterable<unknown> | Iterable<unknown>;

export { ScriptError } from "./script-error.js";

/** A script file's text, parsed and checked (JSON, then the schema at every level, then the depth). */
export function parseScriptFile(text: string, label: string): ScriptTree {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ScriptError(`${label}: not valid JSON (${(error as Error).message})`);
  }
  return parseScript(raw, label);
}

/** A script given as a value (`{ replies, agents? }`), checked as a file's would be. */
export function parseScript(raw: unknown, label: string): ScriptTree {
  const parsed = checked(scriptFileSchema, raw, label);
  if (!parsed.success) {
    throw new ScriptError(`${label}: not a harness script: ${z.prettifyError(parsed.error)}`);
  }
  return scriptTree(parsed.data, label, "");
}

/** The parsed node as a tree of maps (a label is never looked up on an object's prototype). */
function scriptTree(node: ScriptFileNode, label: string, path: string): ScriptTree {
  const agents = new Map<string, ScriptTree>();
  for (const [name, child] of Object.entries(node.agents ?? {})) {
    const childPath = path === "" ? name : `${path}/${name}`;
    if (childPath.split("/").length > MAX_AGENT_DEPTH) {
      throw new ScriptError(
        `${label}: agents ${childPath} are nested deeper than sub-agents go (${MAX_AGENT_DEPTH} levels)`,
      );
    }
    agents.set(name, scriptTree(child, label, childPath));
  }
  return { replies: node.replies, agents };
}

export function parseTurn(value: unknown, label: string): ScriptedTurn {
  const quick = quickTurn(value);
  if (quick !== undefined) return quick;
  const parsed = checked(scriptedTurnSchema, value, label);
  if (!parsed.success)
    throw new ScriptError(`${label}: invalid scripted reply: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * The usual reply of a script function, `{ text?, calls? }` with well-formed calls, checked by
 * hand: a function script answers every step, and the union schema's parse measured as a visible
 * share of a benchmark step. Anything else (usage, a stream, an error, every malformed reply) goes
 * through the schema, which decides and explains; the result is what the schema would give.
 */
function quickTurn(value: unknown): ScriptedTurn | undefined {
  if (!isPlainObject(value)) return undefined;
  let text = "";
  let calls: { id: string; name: string; arguments: Record<string, never> }[] = [];
  for (const key of Object.keys(value)) {
    const field = value[key];
    if (key === "text" && typeof field === "string") text = field;
    else if (key === "calls" && Array.isArray(field)) {
      const checkedCalls = field.map(quickCall);
      if (checkedCalls.some((call) => call === undefined)) return undefined;
      calls = checkedCalls as typeof calls;
    } else return undefined;
  }
  return { text, calls };
}

function quickCall(call: unknown) {
  if (!isPlainObject(call) || Object.keys(call).length !== 3) return undefined;
  const { id, name, arguments: args } = call;
  if (typeof id !== "string" || id === "" || typeof name !== "string" || name === "") return undefined;
  if (!isJsonObject(args) || !isJsonValue(args)) return undefined;
  return { id, name, arguments: args };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
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
