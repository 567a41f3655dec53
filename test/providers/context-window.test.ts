import { describe, expect, it } from "vitest";
import { SessionState } from "../../src/engine/state.js";
import { MAX_RATIO, MIN_RATIO, requestTokens, TokenCalibration } from "../../src/engine/tokens.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { ProviderConfigError, parseProfile } from "../../src/providers/config.js";
import {
  ContextBudgetError,
  knownContextWindow,
  MAX_CONTEXT_TOKENS,
  resolveContextBudget,
  UNKNOWN_MODEL_WINDOW,
} from "../../src/providers/context-window.js";

describe("context window table", () => {
  it.each([
    ["claude-sonnet-4-5-20250929", 200_000],
    ["gpt-4o-mini", 128_000],
    ["gpt-4.1", 1_047_576],
    ["gpt-4.1-mini", 1_047_576],
    ["gpt-5-mini", 400_000],
    ["gpt-4", 8_192],
    ["o1-mini", 128_000],
    ["o3-mini", 200_000],
    ["o4-mini", 200_000],
    ["meta-llama/Llama-3.3-70B-Instruct", 131_072],
    ["llama3.1:8b", 131_072],
    ["llama3:8b", 8_192],
    ["qwen2.5-coder:32b", 32_768],
    ["qwen3-coder-30b", 262_144],
    ["deepseek/deepseek-chat", 128_000],
  ])("knows %s: %i tokens", (model, window) => {
    expect(knownContextWindow(model)).toBe(window);
  });

  it("does not know an unknown model, which gets the conservative default", () => {
    expect(knownContextWindow("my-finetune")).toBeUndefined();
    expect(resolveContextBudget({ model: "my-finetune" })).toEqual({
      window: UNKNOWN_MODEL_WINDOW,
      reserve: 8_192,
      source: "unknown_model",
    });
    expect(UNKNOWN_MODEL_WINDOW).toBe(32_768);
  });
});

describe("context budget precedence", () => {
  const profile = { context_window: 50_000, max_output_tokens: 4_000 };
  it("the flag beats the profile, which beats the table", () => {
    expect(resolveContextBudget({ flag: 9_000, profile, model: "gpt-4o" })).toMatchObject({
      window: 9_000,
      source: "flag",
    });
    expect(resolveContextBudget({ profile, model: "gpt-4o" })).toMatchObject({
      window: 50_000,
      source: "profile",
    });
    expect(resolveContextBudget({ profile: {}, model: "gpt-4o" })).toMatchObject({
      window: 128_000,
      source: "table",
    });
  });

  it("reserves the profile's max output, at most a quarter of the window, unless reply_reserve says otherwise", () => {
    expect(resolveContextBudget({ profile, model: "gpt-4o" }).reserve).toBe(4_000);
    expect(resolveContextBudget({ flag: 8_000, profile, model: "gpt-4o" }).reserve).toBe(2_000);
    expect(resolveContextBudget({ model: "gpt-4o" }).reserve).toBe(8_192);
    expect(resolveContextBudget({ profile: { ...profile, reply_reserve: 123 } }).reserve).toBe(123);
  });

  it("refuses a reply_reserve that leaves no room for a request", () => {
    expect(() => resolveContextBudget({ flag: 1_000, profile: { reply_reserve: 1_000 } })).toThrow(
      ContextBudgetError,
    );
  });

  it.each([0, -1, 1.5, MAX_CONTEXT_TOKENS + 1, "8000"])(
    "a profile with context_window %s is refused",
    (value) => {
      const bad = { provider: "openai", model: "gpt-4o", context_window: value };
      expect(() => parseProfile(bad)).toThrow(ProviderConfigError);
      expect(() => parseProfile(bad)).toThrow(/context_window/);
      expect(() => parseProfile({ provider: "openai", model: "gpt-4o", reply_reserve: value })).toThrow(
        /reply_reserve/,
      );
    },
  );
});

describe("token calibration", () => {
  it("scales the basis by reported / estimated over earlier requests, within bounds", () => {
    const calibration = new TokenCalibration();
    expect(calibration.estimate(1000)).toBe(1000);
    calibration.add(1000, 1500);
    calibration.add(1000, 1700);
    expect(calibration.ratio).toBeCloseTo(1.6);
    expect(calibration.estimate(100)).toBe(160);
    calibration.add(10, 0); // nothing reported (a scripted model): ignored
    expect(calibration.ratio).toBeCloseTo(1.6);
    const absurd = new TokenCalibration();
    absurd.add(100, 1_000_000);
    expect(absurd.ratio).toBe(MAX_RATIO);
    const tiny = new TokenCalibration();
    tiny.add(100_000, 1);
    expect(tiny.ratio).toBe(MIN_RATIO);
  });

  const record = (type: string, data: object) => ({ type, data }) as unknown as AnyRecord;

  it("reads journals written before estimates existed: no calibration, null estimates", () => {
    const records = [
      record("model.started", { step: 0, attempt: 0, tools_digest: "0".repeat(64) }),
      record("model.reply", {
        step: 0,
        text: "hi",
        calls: [],
        stop_reason: "stop",
        usage: { input_tokens: 900 },
      }),
      record("run.stopped", { status: "stopped", reason: "context_budget_exhausted", message: "old" }),
    ];
    const state = SessionState.from(records);
    expect(state.calibration.ratio).toBe(1);
    expect(state.peakEstimatedInputTokens).toBeNull();
    expect(state.peakReportedInputTokens).toBe(900);
    expect(state.outcome).toMatchObject({ kind: "stopped", data: { reason: "context_budget_exhausted" } });
    expect(requestTokens(records)).toEqual({
      requests: [
        {
          step: 0,
          attempt: 0,
          estimated_input_tokens: null,
          reported_input_tokens: 900,
          cached_input_tokens: null,
          cache_write_tokens: null,
          context_window: null,
        },
      ],
      peak: { estimated_input_tokens: null, reported_input_tokens: 900 },
    });
  });

  it("pairs a report only with the request it answers (a failed attempt has none)", () => {
    const started = (attempt: number, basis: number) =>
      record("model.started", {
        step: 0,
        attempt,
        tools_digest: "0".repeat(64),
        basis_tokens: basis,
        estimated_input_tokens: basis,
        context_window: 10_000,
        reply_reserve: 100,
      });
    const records = [
      started(0, 1000),
      record("model.retryable_error", {
        step: 0,
        attempt: 0,
        code: "RATE_LIMIT",
        message: "m",
        retry_in_ms: 1,
      }),
      started(1, 2000),
      record("model.reply", {
        step: 0,
        text: "",
        calls: [],
        stop_reason: "stop",
        usage: { input_tokens: 3000 },
      }),
    ];
    expect(SessionState.from(records).calibration.ratio).toBe(1.5);
    expect(requestTokens(records).requests.map((r) => r.reported_input_tokens)).toEqual([null, 3000]);
  });
});
