import type { z } from "zod";
import { isJsonObject, isJsonValue, jsonObjectSchema } from "./json.js";

/**
 * Whether a value passes a zod schema, as straight-line code generated from the schema once.
 *
 * Why: the journal checks every record it appends and loads against its event's schema. zod runs
 * every schema through the same few internal functions, so in a process that also parses tool
 * arguments, stream events and config those calls see every shape there is and run at their
 * slowest: measured in a running session, four appends a step spent about 100 µs in zod, five
 * times what the same parses take in a loop of their own. The generated checker reads each field
 * by its name, so every event type gets code of its own.
 *
 * It answers only "would zod accept this?", and it is written to be used that way round: a `true`
 * is trusted, a `false` is handed to zod, which judges again and explains. It knows the kinds the
 * journal's schemas are made of (objects, strict or not; arrays; strings with a minimum length or a
 * pattern; finite, safe-integer and bounded numbers; booleans; enums and literals; unions;
 * optional and nullable; the JSON object schema); any other kind, or a check it does not know
 * (a refinement), is asked of zod itself for that part of the value. The test compares it with
 * zod on generated values for every event schema.
 */
export type CompiledCheck = (value: unknown) => boolean;

type Schema = z.core.$ZodType;

interface Def {
  type: string;
  shape?: Record<string, Schema>;
  catchall?: Schema;
  element?: Schema;
  innerType?: Schema;
  options?: readonly Schema[];
  entries?: Record<string, unknown>;
  values?: readonly unknown[];
  checks?: readonly { _zod: { def: CheckDef } }[];
  /** Set on a schema that is itself a check (z.int(), z.email()) or that coerces: zod judges those. */
  check?: string;
  coerce?: boolean;
}

interface CheckDef {
  check: string;
  format?: string;
  pattern?: RegExp;
  minimum?: number;
  value?: unknown;
  inclusive?: boolean;
  when?: unknown;
}

function defOf(schema: Schema): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/** Code points in `text`, counting a lone surrogate as one (as zod's min_length does). */
function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** zod's min_length for strings: code points, counted only when the units leave it in doubt. */
function stringAtLeast(text: string, minimum: number): boolean {
  const units = text.length;
  if (units < minimum) return false;
  if (units >= minimum * 2) return true;
  return codePoints(text) >= minimum;
}

function isJsonObjectValue(value: unknown): boolean {
  return isJsonObject(value) && isJsonValue(value);
}

class Compiler {
  /** Values the generated code refers to by index: patterns, sets, helpers, fallback schemas. */
  readonly refs: unknown[] = [];
  /** Functions generated for objects and arrays, named f0, f1, ... */
  readonly functions: string[] = [];
  readonly #memo = new Map<Schema, string>();

  ref(value: unknown): string {
    this.refs.push(value);
    return `r[${this.refs.length - 1}]`;
  }

  /** A JS boolean expression over the variable `v` that is true when zod accepts its value. */
  expression(schema: Schema, v: string): string {
    const def = defOf(schema);
    if (schema === (jsonObjectSchema as unknown as Schema)) return `${this.ref(isJsonObjectValue)}(${v})`;
    if (def.check !== undefined || def.coerce === true) return this.fallback(schema, v);
    switch (def.type) {
      case "string":
        return this.withChecks(schema, def, `typeof ${v} === "string"`, v, "string");
      case "number":
        return this.withChecks(schema, def, `typeof ${v} === "number" && Number.isFinite(${v})`, v, "number");
      case "boolean":
        return this.withChecks(schema, def, `typeof ${v} === "boolean"`, v, "boolean");
      case "enum":
        if (!Object.values(def.entries ?? {}).every((entry) => typeof entry === "string"))
          return this.fallback(schema, v);
        return this.withChecks(
          schema,
          def,
          `${this.ref(new Set(Object.values(def.entries ?? {})))}.has(${v})`,
          v,
          "enum",
        );
      case "literal":
        return this.withChecks(schema, def, `${this.ref(new Set(def.values ?? []))}.has(${v})`, v, "literal");
      case "optional":
        if ((def.checks ?? []).length > 0 || def.innerType === undefined) return this.fallback(schema, v);
        return `(${v} === undefined || ${this.expression(def.innerType, v)})`;
      case "nullable":
        if ((def.checks ?? []).length > 0 || def.innerType === undefined) return this.fallback(schema, v);
        return `(${v} === null || ${this.expression(def.innerType, v)})`;
      case "union":
        if ((def.checks ?? []).length > 0 || !def.options || def.options.length === 0)
          return this.fallback(schema, v);
        return `(${def.options.map((option) => this.expression(option, v)).join(" || ")})`;
      case "object":
      case "array":
        return `${this.functionFor(schema, def)}(${v})`;
      default:
        return this.fallback(schema, v);
    }
  }

  /** The type test followed by the schema's checks; a check it does not know goes to zod whole. */
  withChecks(schema: Schema, def: Def, typeTest: string, v: string, kind: string): string {
    const parts = [typeTest];
    for (const check of def.checks ?? []) {
      const c = check._zod.def;
      if (c.when !== undefined && c.check !== "min_length") return this.fallback(schema, v);
      if (kind === "string" && c.check === "min_length" && typeof c.minimum === "number") {
        parts.push(`${this.ref(stringAtLeast)}(${v}, ${c.minimum})`);
      } else if (
        kind === "string" &&
        c.check === "string_format" &&
        c.format === "regex" &&
        c.pattern instanceof RegExp
      ) {
        const pattern = this.ref(c.pattern);
        parts.push(`(${pattern}.lastIndex = 0, ${pattern}.test(${v}))`);
      } else if (kind === "number" && c.check === "number_format" && c.format === "safeint") {
        parts.push(`Number.isSafeInteger(${v})`);
      } else if (kind === "number" && c.check === "greater_than" && typeof c.value === "number") {
        parts.push(`${v} ${c.inclusive ? ">=" : ">"} ${String(c.value)}`);
      } else if (kind === "number" && c.check === "less_than" && typeof c.value === "number") {
        parts.push(`${v} ${c.inclusive ? "<=" : "<"} ${String(c.value)}`);
      } else {
        return this.fallback(schema, v);
      }
    }
    return `(${parts.join(" && ")})`;
  }

  /** Objects and arrays get a function of their own (loops, and one read of each field). */
  functionFor(schema: Schema, def: Def): string {
    const known = this.#memo.get(schema);
    if (known) return known;
    const name = `f${this.functions.length}`;
    this.#memo.set(schema, name);
    this.functions.push("");
    const index = this.functions.length - 1;
    this.functions[index] =
      def.type === "object" ? this.objectFunction(name, schema, def) : this.arrayFunction(name, schema, def);
    return name;
  }

  objectFunction(name: string, schema: Schema, def: Def): string {
    const shape = def.shape ?? {};
    const keys = Object.keys(shape);
    const strict = def.catchall !== undefined && defOf(def.catchall).type === "never";
    if (
      (def.checks ?? []).length > 0 ||
      (def.catchall !== undefined && !strict) ||
      keys.includes("__proto__")
    ) {
      return `function ${name}(x) { return ${this.fallback(schema, "x")}; }`;
    }
    const lines = [
      `function ${name}(x) {`,
      `  if (typeof x !== "object" || x === null || Array.isArray(x)) return false;`,
    ];
    keys.forEach((key, i) => {
      lines.push(`  const k${i} = x[${JSON.stringify(key)}];`);
      lines.push(`  if (!${this.expression(shape[key] as Schema, `k${i}`)}) return false;`);
    });
    if (strict) {
      const allowed = this.ref(new Set(keys));
      lines.push(`  for (const key in x) if (!${allowed}.has(key)) return false;`);
    }
    lines.push("  return true;", "}");
    return lines.join("\n");
  }

  arrayFunction(name: string, schema: Schema, def: Def): string {
    const lines = [`function ${name}(x) {`, "  if (!Array.isArray(x)) return false;"];
    for (const check of def.checks ?? []) {
      const c = check._zod.def;
      if (c.check === "min_length" && typeof c.minimum === "number") {
        lines.push(`  if (x.length < ${c.minimum}) return false;`);
      } else {
        return `function ${name}(x) { return ${this.fallback(schema, "x")}; }`;
      }
    }
    if (def.element === undefined) return `function ${name}(x) { return ${this.fallback(schema, "x")}; }`;
    lines.push(
      "  for (let i = 0; i < x.length; i++) {",
      "    const e = x[i];",
      `    if (!${this.expression(def.element, "e")}) return false;`,
      "  }",
      "  return true;",
      "}",
    );
    return lines.join("\n");
  }

  /** A part of the schema the generator does not model: zod judges it. */
  fallback(schema: Schema, v: string): string {
    const parse = (value: unknown) => (schema as unknown as z.ZodType).safeParse(value).success;
    return `${this.ref(parse)}(${v})`;
  }
}

/** Generate the checker for `schema` (see the module comment for what a `false` means). */
export function compileCheck(schema: z.ZodType): CompiledCheck {
  const compiler = new Compiler();
  const root = compiler.expression(schema as unknown as Schema, "value");
  const body = [...compiler.functions, `return function check(value) { return ${root}; };`].join("\n");
  // The code is generated from the program's own schemas (field names through JSON.stringify,
  // everything else as references), never from input.
  try {
    return new Function("r", body)(compiler.refs) as CompiledCheck;
  } catch {
    // Code generation is off (node --disallow-code-generation-from-strings): every value is
    // then judged by zod.
    return () => false;
  }
}

/**
 * How many values a deferred check leaves to zod before it generates its code. Generating is a
 * schema walk and a `new Function` (code V8 compiles in every process: no code cache holds it),
 * about what a few dozen zod parses cost; a short command-line run journals most event types a
 * handful of times and is cheaper without it, a long session soon pays it back.
 */
export const DEFERRED_CHECK_AFTER = 16;

/**
 * The same answers as `compileCheck(schema)`, by zod itself (interpreted, no code generated) for
 * the first `after` values, and by the generated check from then on.
 */
export function deferredCheck(schema: z.ZodType, after: number = DEFERRED_CHECK_AFTER): CompiledCheck {
  let left = after;
  let compiled: CompiledCheck | undefined;
  return (value) => {
    if (compiled !== undefined) return compiled(value);
    if (left > 0) {
      left -= 1;
      return schema.safeParse(value, { jitless: true }).success;
    }
    compiled = compileCheck(schema);
    return compiled(value);
  };
}
