import { describe, expect, it } from "vitest";
import { modelProfileSchema } from "../../src/providers/config.js";
import { costUsd, formatCost } from "../../src/providers/cost.js";

describe("the cost of a usage at a profile's prices", () => {
  it("charges cached input at the cached price, the rest of the input and the output at theirs", () => {
    const usage = { input_tokens: 120_000, cached_tokens: 20_000, output_tokens: 7_000 };
    const prices = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 };
    expect(costUsd(usage, prices)).toBeCloseTo(0.411, 12);
    expect(formatCost(costUsd(usage, prices))).toBe("$0.4110");
  });

  it("without a cached price, cached input costs what input costs", () => {
    const usage = { input_tokens: 1_000_000, cached_tokens: 400_000, output_tokens: 0 };
    expect(costUsd(usage, { input_per_mtok: 2, output_per_mtok: 8 })).toBeCloseTo(2, 12);
  });

  it("never counts more cached tokens than input tokens", () => {
    const usage = { input_tokens: 100, cached_tokens: 500, output_tokens: 0 };
    expect(costUsd(usage, { input_per_mtok: 1, output_per_mtok: 1, cached_input_per_mtok: 10 })).toBeCloseTo(
      0.001,
      12,
    );
  });

  it("prices in a profile are strict: unknown keys and negative prices are rejected", () => {
    const base = { provider: "openai", model: "m" };
    expect(
      modelProfileSchema.safeParse({ ...base, prices: { input_per_mtok: 1, output_per_mtok: 2 } }).success,
    ).toBe(true);
    expect(
      modelProfileSchema.safeParse({ ...base, prices: { input_per_mtok: 1, output_per_mtok: 2, extra: 1 } })
        .success,
    ).toBe(false);
    expect(
      modelProfileSchema.safeParse({ ...base, prices: { input_per_mtok: -1, output_per_mtok: 2 } }).success,
    ).toBe(false);
    expect(modelProfileSchema.safeParse({ ...base, prices: { input_per_mtok: 1 } }).success).toBe(false);
  });
});
