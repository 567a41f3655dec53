import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseTurn, ScriptError, scriptedTurnSchema } from "../../src/providers/scripted/script.js";

describe("a script function's reply", () => {
  it("is read exactly as the schema reads it, near misses included", () => {
    // The usual { text, calls } reply is checked by hand first; the schema judges everything else.
    const value = fc.oneof(
      fc.string({ maxLength: 3 }),
      fc.constant(""),
      fc.integer(),
      fc.constant(null),
      fc.constant(undefined),
      fc.constant({}),
      fc.constant({ a: [1, "x"] }),
      fc.constant({ n: Number.NaN }),
      fc.constant([]),
    );
    const call = fc.record({ id: value, name: value, arguments: value, extra: value }, { requiredKeys: [] });
    const reply = fc.record(
      {
        text: value,
        calls: fc.oneof(fc.array(call, { maxLength: 3 }), value),
        usage: fc.constant({ input_tokens: 3 }),
        other: value,
      },
      { requiredKeys: [] },
    );
    const odd = fc.oneof(
      reply,
      reply.map((fields) => Object.assign(Object.create(null) as object, fields)),
      fc.constant({ calls: [{ id: "c", name: "t", arguments: { p: 1 } }] }),
      fc.constant({
        calls: [Object.assign(Object.create(null) as object, { id: "c", name: "t", arguments: {} })],
      }),
    );
    fc.assert(
      fc.property(odd, (raw) => {
        const expected = scriptedTurnSchema.safeParse(raw);
        let got: unknown;
        try {
          got = parseTurn(raw, "reply");
        } catch (error) {
          expect(error).toBeInstanceOf(ScriptError);
          expect(expected.success).toBe(false);
          return;
        }
        expect(expected.success).toBe(true);
        expect(got).toStrictEqual(expected.data);
      }),
      { numRuns: 3000 },
    );
  });
});
