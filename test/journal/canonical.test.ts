import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeRecordLine, encodeRecord, isRecordFault } from "../../src/journal/codec.js";
import { JournalKey } from "../../src/journal/key.js";
import { event, GENESIS_HASH } from "../../src/journal/vocabulary.js";
import { canonicalForm, canonicalJson, digestOf } from "../../src/shared/hash.js";
import type { JsonObject } from "../../src/shared/json.js";

const key = JournalKey.ephemeral();

function float64(hex: string): number {
  return Buffer.from(hex, "hex").readDoubleBE(0);
}

describe("canonicalJson follows RFC 8785", () => {
  it("matches the RFC's section 3.2.2 example", () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`;
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
    expect(canonicalJson(JSON.parse(input))).toBe(expected);
  });

  it("sorts keys by UTF-16 code units (section 3.2.3 example)", () => {
    const input = String.raw`{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }`;
    // Compared as text: JSON.parse would move the integer-like key "1" to the front again.
    expect(canonicalJson(JSON.parse(input))).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it("formats numbers as in the RFC's appendix B", () => {
    const vectors: [string, string][] = [
      ["0000000000000000", "0"],
      ["8000000000000000", "0"],
      ["0000000000000001", "5e-324"],
      ["7fefffffffffffff", "1.7976931348623157e+308"],
      ["4340000000000000", "9007199254740992"],
      ["4430000000000000", "295147905179352830000"],
      ["44b52d02c7e14af6", "1e+23"],
      ["3eb0c6f7a0b5ed8d", "0.000001"],
      ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
      ["c3e0000000000000", "-9223372036854776000"],
    ];
    for (const [bits, text] of vectors) expect(canonicalJson(float64(bits))).toBe(text);
  });

  it("gives the RFC 8785 reference implementation's text for any JSON value", () => {
    // Journals written with the reference must keep verifying: the same value, the same bytes.
    const text = fc.string({ unit: "grapheme-composite", maxLength: 12 });
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        text,
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie("node"), { maxLength: 5 }),
        fc.dictionary(fc.oneof(text, fc.string({ unit: "binary", maxLength: 6 })), tie("node"), {
          maxKeys: 6,
        }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(canonicalize(v));
      }),
      { numRuns: 2000 },
    );
    const dated = { at: new Date(0), skipped: undefined, list: [undefined, 1] };
    expect(canonicalJson(dated)).toBe(canonicalize(dated));
  });

  it("gives the reference's text for values whose keys are already in canonical order", () => {
    // Such values take the JSON.stringify path: it must agree with the key-by-key walk.
    const sortedCopy = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(sortedCopy);
      if (typeof value !== "object" || value === null) return value;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(value).sort()) out[k] = sortedCopy((value as Record<string, unknown>)[k]);
      return out;
    };
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const sorted = sortedCopy(v);
        expect(canonicalJson(sorted)).toBe(canonicalize(sorted));
      }),
      { numRuns: 1000 },
    );
    // Integer-like keys are listed first by the engine whatever their code-unit order.
    expect(canonicalJson({ "10": 1, "2": 2, a: 3 })).toBe('{"10":1,"2":2,"a":3}');
    expect(canonicalJson({ a: { b: new String("x") } })).toBe(canonicalize({ a: { b: new String("x") } }));
    expect(canonicalJson({ a: 1, b: { toJSON: () => ({ z: 1, y: 2 }) } })).toBe('{"a":1,"b":{"y":2,"z":1}}');
    expect(() => canonicalJson({ a: 1, f: () => 1 })).toThrow(/function/);
  });

  it("gives with the text a fresh copy equal to parsing it, for plain JSON and everything else", () => {
    // The journal keeps this copy as the record's data in place of a parse of the line.
    const check = (v: unknown) => {
      const form = canonicalForm(v);
      expect(form.text).toBe(canonicalize(v));
      expect(form.text).toBe(canonicalJson(v));
      expect(form.value).toStrictEqual(JSON.parse(form.text));
      // Same enumeration order as the parse, so a later JSON.stringify agrees too.
      expect(JSON.stringify(form.value)).toBe(JSON.stringify(JSON.parse(form.text)));
    };
    fc.assert(fc.property(fc.jsonValue(), check), { numRuns: 1000 });
    const reordered = fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), {
      maxKeys: 8,
    });
    fc.assert(fc.property(reordered, check), { numRuns: 500 });
    check({ "10": 1, "2": { z: 1, a: [undefined, -0] }, b: undefined });
    check(JSON.parse('{"__proto__":{"x":1},"a":1}'));
    check({ at: new Date(0), n: new Number(2) });
    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i < 400; i++) at = at.next = {} as Record<string, unknown>;
    check(deep);
    // The copy is the caller's no longer: changing the input afterwards changes nothing.
    const input = { list: [1, { b: 2 }] };
    const form = canonicalForm(input);
    (input.list[1] as { b: number }).b = 3;
    expect(form.value).toStrictEqual({ list: [1, { b: 2 }] });
    expect(() => canonicalForm({ a: "\ud800" })).toThrow(/lone surrogate/);
    expect(() => canonicalForm({ a: Number.NaN })).toThrow();
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(() => canonicalForm(loop)).toThrow(/circular/);
  });

  it("refuses circular values and values JSON cannot hold", () => {
    const loop: Record<string, unknown> = { a: 1 };
    loop.self = loop;
    expect(() => canonicalJson(loop)).toThrow(/circular/);
    expect(() => canonicalJson({ big: 1n })).toThrow();
    expect(() => canonicalJson(undefined)).toThrow();
    // A value seen twice, but not inside itself, is not circular.
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared] })).toBe('{"a":{"x":1},"b":[{"x":1}]}');
  });

  it("refuses values without a canonical form", () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, "\ud800", { "\udc00": 1 }]) {
      expect(() => canonicalJson(value)).toThrow();
    }
  });
});

describe("record codec", () => {
  const at = new Date("2025-03-01T12:00:00.000Z");
  const toolStarted = (args: JsonObject) =>
    event("tool.started", {
      call_id: "c1",
      name: "t",
      arguments: args,
      arguments_hash: "a".repeat(64),
      tool_version: "1",
      schema_digest: "b".repeat(64),
      effect: "read",
      batch: 0,
    });

  it("writes exactly the canonical JSON of the record, hashed without its hash and mac fields", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.nat(1_000_000), (args, seq) => {
        const { record, line } = encodeRecord(toolStarted(args as JsonObject), seq, GENESIS_HASH, at, key);
        const { hash, mac, ...rest } = record;
        expect(key.verifies(hash, mac)).toBe(true);
        expect(line).toBe(`${canonicalJson(record)}\n`);
        expect(hash).toBe(digestOf(rest));
        expect(decodeRecordLine(line.slice(0, -1), seq, GENESIS_HASH)).toEqual(record);
      }),
      { numRuns: 300 },
    );
  });

  it("rejects any single-character change to a line: as a fault, or as a tag that no longer authenticates", () => {
    const { line } = encodeRecord(event("user.input", { text: "abc" }), 0, GENESIS_HASH, at, key);
    const text = line.slice(0, -1);
    fc.assert(
      fc.property(fc.nat(text.length - 1), fc.string({ minLength: 1, maxLength: 1 }), (index, char) => {
        fc.pre(text[index] !== char);
        const changed = text.slice(0, index) + char + text.slice(index + 1);
        const decoded = decodeRecordLine(changed, 0, GENESIS_HASH);
        expect(isRecordFault(decoded) || !key.verifies(decoded.hash, decoded.mac)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
