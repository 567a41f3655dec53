import { Ajv, type ErrorObject, type Options, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import { isJsonObject, type JsonObject } from "../shared/json.js";

/**
 * An MCP server's input schema, checked and compiled once: what the model is shown and the strict
 * validator every call's arguments pass before anything is sent to the server. The schema is
 * foreign input: one that does not compile makes its tool unavailable (with the reason), never a
 * crash, and it is bounded before anything recursive walks it.
 */

export type CompiledInputSchema =
  | { ok: true; modelSchema: JsonObject; validate(args: unknown): InputIssue[] }
  | { ok: false; reason: string };

/** One way arguments fail the schema: the field (a path into the arguments) and what is wrong. */
export interface InputIssue {
  path: (string | number)[];
  message: string;
}

/** Larger schemas are refused: a tool definition that big is a mistake or an attack on the context. */
export const MAX_SCHEMA_BYTES = 128 * 1024;
export const MAX_SCHEMA_DEPTH = 64;

// Formats are annotations in 2020-12 (and this validator knows none): they never refuse a call.
// No coercion, no defaults, no removal: the server receives exactly what the model sent.
// Schemas with an $id are not kept in the instance, so two servers' equal ids cannot collide.
const OPTIONS: Options = {
  strict: false,
  allErrors: true,
  validateFormats: false,
  addUsedSchema: false,
  logger: false,
};

const validators = {
  draft07: new Ajv(OPTIONS),
  draft2019: new Ajv2019(OPTIONS),
  draft2020: new Ajv2020(OPTIONS),
};

type Draft = keyof typeof validators;

const DRAFTS: ReadonlyMap<string, Draft> = new Map<string, Draft>([
  ["http://json-schema.org/draft-07/schema", "draft07"],
  // Draft-07 only added keywords to draft-06 (if/then/else and annotations): one validator serves both.
  ["http://json-schema.org/draft-06/schema", "draft07"],
  ["https://json-schema.org/draft/2019-09/schema", "draft2019"],
  ["https://json-schema.org/draft/2020-12/schema", "draft2020"],
]);

/**
 * Compile a server's input schema. Without `$schema` it is 2020-12 (the MCP default), falling back
 * to draft-07 for schemas only valid there (servers written before that default). At the top level
 * an object schema that lists its properties and does not say otherwise refuses unknown ones, as
 * harness's own tools do; the model is shown that same tightened schema (without `$schema`).
 */
export function compileInputSchema(schema: unknown): CompiledInputSchema {
  if (!isJsonObject(schema)) return { ok: false, reason: "the input schema is not a JSON object" };
  const bounds = checkBounds(schema);
  if (bounds !== undefined) return { ok: false, reason: bounds };
  if (schema.type !== "object") return { ok: false, reason: 'the input schema is not of type "object"' };
  const strict = tightened(schema);
  const declared = schema.$schema;
  let drafts: Draft[];
  if (declared === undefined) drafts = ["draft2020", "draft07"];
  else {
    const draft = typeof declared === "string" ? DRAFTS.get(declared.replace(/#$/, "")) : undefined;
    if (draft === undefined) {
      return { ok: false, reason: `the input schema's dialect ${JSON.stringify(declared)} is not supported` };
    }
    drafts = [draft];
  }
  let firstError = "";
  for (const draft of drafts) {
    try {
      // The dialect is chosen here; ajv would look the declared one up (and not know draft-06).
      const { $schema: _declared, ...body } = strict;
      const validate = validators[draft].compile(body);
      return { ok: true, modelSchema: body, validate: (args) => issuesOf(validate, args) };
    } catch (error) {
      if (firstError === "") firstError = error instanceof Error ? error.message : String(error);
    }
  }
  return { ok: false, reason: `the input schema does not compile: ${firstError.slice(0, 300)}` };
}

const OPEN_KEYWORDS = [
  "additionalProperties",
  "patternProperties",
  "unevaluatedProperties",
  "allOf",
  "anyOf",
  "oneOf",
  "$ref",
  "$dynamicRef",
  "if",
  "dependentSchemas",
  "dependencies",
];

/**
 * Top-level unknown properties refused when the schema lists its properties, unless it composes
 * or already decides them. A bare `{"type": "object"}` names none, so it stays open.
 */
function tightened(schema: JsonObject): JsonObject {
  if (!("properties" in schema) || OPEN_KEYWORDS.some((keyword) => keyword in schema)) return schema;
  return { ...schema, additionalProperties: false };
}

function issuesOf(validate: ValidateFunction, args: unknown): InputIssue[] {
  if (validate(args)) return [];
  return (validate.errors ?? []).map(issueOf);
}

function issueOf(error: ErrorObject): InputIssue {
  const path: (string | number)[] = error.instancePath
    .split("/")
    .slice(1)
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"));
  const params = error.params as Record<string, unknown>;
  if (error.keyword === "additionalProperties" && typeof params.additionalProperty === "string") {
    return { path, message: `unknown property "${params.additionalProperty}"` };
  }
  if (error.keyword === "required" && typeof params.missingProperty === "string") {
    return { path: [...path, params.missingProperty], message: "required" };
  }
  return { path, message: error.message ?? `fails ${error.keyword}` };
}

/** Size and nesting first: everything after (ajv, canonical hashing) recurses. */
function checkBounds(schema: JsonObject): string | undefined {
  let text: string;
  try {
    text = JSON.stringify(schema);
  } catch {
    return "the input schema cannot be serialized";
  }
  if (Buffer.byteLength(text) > MAX_SCHEMA_BYTES) {
    return `the input schema is larger than ${MAX_SCHEMA_BYTES} bytes`;
  }
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const ch = text[index];
    if (inString) {
      if (ch === "\\") index += 1;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") deepest = Math.max(deepest, ++depth);
    else if (ch === "}" || ch === "]") depth -= 1;
  }
  if (deepest > MAX_SCHEMA_DEPTH) return `the input schema is nested deeper than ${MAX_SCHEMA_DEPTH} levels`;
  return undefined;
}
