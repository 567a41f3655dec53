import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { EVENT_SCHEMAS, type EventType } from "../../src/journal/vocabulary.js";
import { compileCheck, DEFERRED_CHECK_AFTER, deferredCheck } from "../../src/shared/compiled-check.js";
import { jsonObjectSchema } from "../../src/shared/json.js";

/*
 * The generated checker must say exactly what zod says. Values are generated from each schema's
 * own definition, mostly valid ones with near misses mixed in at every level (a wrong type, a
 * number just outside its bounds, a string that misses its pattern by one character, a missing
 * or an extra key), and each is judged by both.
 */

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  element?: z.ZodType;
  innerType?: z.ZodType;
  options?: z.ZodType[];
  entries?: Record<string, unknown>;
  values?: unknown[];
  checks?: { _zod: { def: { check: string; format?: string; minimum?: number; value?: number } } }[];
};

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

const junk = fc.oneof(
  fc.constantFrom<unknown>(
    undefined,
    null,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    -0,
    "",
    [],
    {},
    true,
    2 ** 53,
    1.5,
    new Date(0),
  ),
  fc.anything({ maxDepth: 2 }),
);

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
const nearHex = fc.oneof(
  hex64.map((h) => `${h.slice(0, 63)}G`),
  hex64.map((h) => h.slice(1)),
  hex64.map((h) => h.toUpperCase()),
  hex64.map((h) => `${h}\n`),
);

/**
 * Values for `schema`: `exact` ones should all pass (so whole records pass often enough to test
 * the accepting side), `noisy` ones mix near misses and junk in at every level.
 */
type Mode = "exact" | "noisy";

function arbitraryFor(schema: z.ZodType, mode: Mode, depth = 0): fc.Arbitrary<unknown> {
  const valid = validFor(schema, mode, depth);
  if (mode === "exact") return valid;
  return fc.oneof({ arbitrary: valid, weight: 12 }, { arbitrary: junk, weight: 1 });
}

function validFor(schema: z.ZodType, mode: Mode, depth: number): fc.Arbitrary<unknown> {
  const exact = mode === "exact";
  if (schema === (jsonObjectSchema as unknown as z.ZodType)) {
    const object = fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
    if (exact) return object;
    return fc.oneof(
      fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      fc.constant({ a: [1, { b: undefined }] }),
      fc.constant({ a: Number.NaN }),
      fc.constant(Object.assign(Object.create({ inherited: 1 }), { own: 1 })),
    );
  }
  const def = defOf(schema);
  const checks = (def.checks ?? []).map((c) => c._zod.def);
  switch (def.type) {
    case "string": {
      if (checks.some((c) => c.format === "regex"))
        return exact ? hex64 : fc.oneof(hex64, hex64, nearHex, fc.string());
      const min = checks.find((c) => c.check === "min_length")?.minimum;
      if (exact) return fc.constantFrom("src/a.ts", "a", "b/c d.txt", "x".repeat(Math.max(1, min ?? 0)));
      // Paths and other refined strings: common shapes and awkward ones.
      return fc.oneof(
        fc.string({ minLength: min ?? 0, maxLength: 8 }),
        fc.constantFrom("", "a", "src/a.ts", "../x", "a//b", "/abs", ".", "\u{1F600}", "\ud800", "a\u0000b"),
      );
    }
    case "number": {
      const int = checks.some((c) => c.format === "safeint");
      const bound = checks.find((c) => c.check === "greater_than");
      const edges: number[] = [0, -0, 1, -1, 0.5, 2 ** 53, -(2 ** 53), 2 ** 53 - 1];
      if (bound?.value !== undefined)
        edges.push(bound.value, bound.value - 1, bound.value + 1, bound.value - 0.5);
      if (exact) return fc.integer({ min: (bound?.value ?? 0) + 1, max: 1_000_000 });
      return fc.oneof(
        int ? fc.integer({ min: -3, max: 1_000_000 }) : fc.double({ noNaN: false }),
        fc.constantFrom(...edges),
        fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
      );
    }
    case "boolean":
      return exact ? fc.boolean() : fc.oneof(fc.boolean(), fc.constantFrom(0, 1, "true"));
    case "enum":
      if (exact) return fc.constantFrom(...Object.values(def.entries ?? {}));
      return fc.oneof(
        fc.constantFrom(...Object.values(def.entries ?? {})),
        fc.constantFrom("", "other", "ALLOW"),
      );
    case "literal":
      if (exact) return fc.constantFrom(...(def.values ?? []));
      return fc.oneof(fc.constantFrom(...(def.values ?? [])), fc.constantFrom("", "x", 0, true));
    case "optional":
      return fc.oneof(fc.constant(undefined), validFor(def.innerType!, mode, depth));
    case "nullable":
      return fc.oneof(fc.constant(null), validFor(def.innerType!, mode, depth));
    case "union":
      return fc.oneof(...def.options!.map((option) => validFor(option, mode, depth)));
    case "array": {
      if (depth > 4) return fc.constant([]);
      const min = checks.find((c) => c.check === "min_length")?.minimum ?? 0;
      return fc.array(arbitraryFor(def.element!, mode, depth + 1), {
        minLength: exact ? min : Math.max(0, min - 1),
        maxLength: Math.max(3, min),
      });
    }
    case "object": {
      const shape = def.shape ?? {};
      const fields = Object.fromEntries(
        Object.entries(shape).map(([key, value]) => [
          key,
          depth > 4 ? junk : arbitraryFor(value, mode, depth + 1),
        ]),
      );
      const optionalKeys = Object.keys(shape).filter((key) => defOf(shape[key]!).type === "optional");
      const record = fc.record(fields, {
        requiredKeys: Object.keys(shape).filter((k) => !optionalKeys.includes(k)),
      });
      if (exact) return record;
      return fc
        .tuple(
          fc.record(fields, { requiredKeys: Object.keys(shape).filter((k) => !optionalKeys.includes(k)) }),
          fc.oneof(
            { arbitrary: fc.constant(undefined), weight: 6 },
            { arbitrary: fc.constantFrom(...Object.keys(shape), "extra", "__proto__"), weight: 1 },
          ),
          fc.oneof(
            { arbitrary: fc.constant("keep"), weight: 6 },
            { arbitrary: fc.constant("drop"), weight: 1 },
          ),
        )
        .map(([record, key, what]) => {
          const out: Record<string, unknown> = { ...(record as Record<string, unknown>) };
          if (key === undefined) return out;
          if (what === "drop") delete out[key];
          else if (key === "__proto__") Object.defineProperty(out, key, { value: 1, enumerable: true });
          else if (!(key in shape)) out[key] = 1;
          return out;
        });
    }
    default:
      return junk;
  }
}

function judge(schema: z.ZodType, value: unknown): { zod: boolean; compiled: boolean } {
  return { zod: schema.safeParse(value).success, compiled: compileCheck(schema)(value) };
}

describe("compileCheck", () => {
  const types = Object.keys(EVENT_SCHEMAS) as EventType[];

  it.each(types)("says what zod says of generated %s data", (type) => {
    const schema = EVENT_SCHEMAS[type] as unknown as z.ZodType;
    const check = compileCheck(schema);
    let accepted = 0;
    let samples = 0;
    fc.assert(
      fc.property(fc.oneof(arbitraryFor(schema, "exact"), arbitraryFor(schema, "noisy")), (value) => {
        const zod = schema.safeParse(value).success;
        samples += 1;
        if (zod) accepted += 1;
        expect(check(value)).toBe(zod);
      }),
      { numRuns: 400, seed: 20261202 },
    );
    // Both sides were exercised: enough whole records pass, and enough fail.
    expect(accepted).toBeGreaterThan(samples * 0.3);
    expect(accepted).toBeLessThan(samples);
  });

  it("follows zod on each kind it generates code for, at the edges", () => {
    const cases: [z.ZodType, unknown[]][] = [
      [z.string().min(2), ["", "a", "ab", "\u{1F600}", "\u{1F600}\u{1F600}", "\ud800\ud800", 1]],
      [z.string().regex(/^a+$/g), ["a", "aa", "b", "", "aab"]],
      [z.number().int().nonnegative(), [0, -0, 1, -1, 0.5, 2 ** 53, Number.NaN, "1"]],
      [z.number().int().positive(), [0, 1, -1]],
      [z.number().int().min(1), [0, 1, 2]],
      [z.number(), [Number.POSITIVE_INFINITY, Number.MAX_VALUE, -0]],
      [z.enum(["a", "b"]), ["a", "c", undefined]],
      [z.literal("x"), ["x", "y"]],
      [z.union([z.boolean(), z.literal("unknown")]), [true, "unknown", "no", 0]],
      [z.string().nullable().optional(), [null, undefined, "s", 1]],
      [z.array(z.string()).min(1), [[], ["a"], [1], "a", [undefined]]],
      [
        z.object({ a: z.string(), b: z.number().optional() }),
        [{ a: "" }, { a: "", b: undefined }, { a: "", b: "1" }, { b: 1 }, { a: "", extra: 1 }, [], null],
      ],
      [
        z.object({ a: z.string() }).strict(),
        [{ a: "" }, { a: "", extra: 1 }, JSON.parse('{"a":"","__proto__":1}'), Object.create({ a: "" })],
      ],
      [z.string().refine((s) => s.startsWith("x")), ["x", "y"]],
      [z.object({ a: z.string() }).refine((o) => o.a !== "no"), [{ a: "yes" }, { a: "no" }]],
      [z.email(), ["a@b.co", "nope"]],
      [z.int(), [1, 1.5]],
      [z.record(z.string(), z.number()), [{ a: 1 }, { a: "1" }]],
      [jsonObjectSchema as unknown as z.ZodType, [{ a: [1] }, { a: Number.NaN }, [], new Date(0)]],
    ];
    for (const [schema, values] of cases) {
      for (const value of values) {
        const { zod, compiled } = judge(schema, value);
        expect({ value, compiled }).toEqual({ value, compiled: zod });
      }
    }
  });
});

describe("compileCheck without code generation", () => {
  it("leaves every value to zod when functions cannot be made from text", () => {
    const original = globalThis.Function;
    globalThis.Function = function refuse() {
      throw new EvalError("Code generation from strings disallowed for this context");
    } as unknown as FunctionConstructor;
    let check: (value: unknown) => boolean;
    try {
      check = compileCheck(z.object({ a: z.string() }));
    } finally {
      globalThis.Function = original;
    }
    expect(check({ a: "x" })).toBe(false);
    expect(check({ a: 1 })).toBe(false);
  });
});

describe("deferredCheck", () => {
  it("answers as zod does before and after it generates its code, and generates only after the first values", () => {
    const schema = z.strictObject({ a: z.string().min(2), n: z.number().int().optional() });
    const values: unknown[] = [
      { a: "xy" },
      { a: "x" },
      { a: "xy", n: 1.5 },
      { a: "xy", extra: 1 },
      null,
      { a: "abc", n: 3 },
    ];
    const zod = values.map((value) => schema.safeParse(value).success);
    expect(zod).toContain(true);
    expect(zod).toContain(false);
    // Function is counted: the generated check is the one `new Function` of compileCheck.
    const original = globalThis.Function;
    let generated = 0;
    globalThis.Function = function counting(...args: string[]) {
      generated += 1;
      return new original(...args);
    } as unknown as FunctionConstructor;
    const answers: boolean[] = [];
    const counts: number[] = [];
    try {
      const check = deferredCheck(schema);
      for (let i = 0; i < DEFERRED_CHECK_AFTER + 2 * values.length; i++) {
        answers.push(check(values[i % values.length]));
        counts.push(generated);
      }
    } finally {
      globalThis.Function = original;
    }
    expect(answers).toEqual(answers.map((_, i) => zod[i % values.length]));
    // zod alone for the first values, then one generated check for the rest.
    expect(counts.slice(0, DEFERRED_CHECK_AFTER)).toEqual(new Array(DEFERRED_CHECK_AFTER).fill(0));
    expect(counts.slice(DEFERRED_CHECK_AFTER)).toEqual(new Array(2 * values.length).fill(1));
  });
});
