import { describe, expect, it } from "vitest";
import { isJsonValue } from "../../src/shared/json.js";

describe("isJsonValue", () => {
  it("accepts what JSON.parse can produce", () => {
    for (const text of ["null", "true", "-1.5e3", '"x"', "[]", "{}", '{"a":[1,{"b":null}],"c":"\\u0000"}']) {
      expect(isJsonValue(JSON.parse(text))).toBe(true);
    }
    expect(isJsonValue(Object.create(null))).toBe(true);
  });

  it("refuses values JSON has no form for, at any depth", () => {
    const refused: unknown[] = [
      undefined,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      10n,
      Symbol("s"),
      () => 1,
      new Date(0),
      new Map(),
      { a: [1, { b: undefined }] },
      [1, [2, [Number.NEGATIVE_INFINITY]]],
      Object.assign(Object.create({ inherited: 1 }), { own: 1 }),
    ];
    for (const value of refused) expect(isJsonValue(value)).toBe(false);
  });

  it("refuses a nesting too deep to walk instead of throwing", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(isJsonValue(deep)).toBe(false);
  });
});
