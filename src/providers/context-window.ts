import { z } from "zod";

/**
 * How many tokens a model can take in one request (its context window), and how many of them are
 * kept free for its reply. Precedence: `--context-window` beats a profile's `context_window`,
 * which beats the table below; a model the table does not know gets UNKNOWN_MODEL_WINDOW.
 */

/** Above this a window is a typo, not a model (the largest windows today are about 1-2M). */
export const MAX_CONTEXT_TOKENS = 10_000_000;

/**
 * The window assumed for a model the table does not know (scripted models included): small
 * enough for the common open models served locally (32K), so an unknown model is stopped by
 * harness rather than rejected by its server. Set `context_window` or `--context-window` for more.
 */
export const UNKNOWN_MODEL_WINDOW = 32_768;

/** A token count from outside (flag, profile): a positive integer no larger than MAX_CONTEXT_TOKENS. */
export const tokenCountSchema = z
  .number()
  .int("must be a whole number of tokens")
  .positive("must be a positive number of tokens")
  .max(MAX_CONTEXT_TOKENS, `must be at most ${MAX_CONTEXT_TOKENS} tokens`);

/**
 * Known windows by model id prefix (lower case; the longest matching prefix wins). Ids are
 * matched after any `vendor/` path (OpenRouter, Hugging Face) and before any `:tag` (Ollama).
 */
const KNOWN_WINDOWS: readonly (readonly [string, number])[] = [
  ["claude-", 200_000],
  ["gpt-5", 400_000],
  ["gpt-4.1", 1_047_576],
  ["gpt-4o", 128_000],
  ["gpt-4-turbo", 128_000],
  ["gpt-4", 8_192],
  ["gpt-3.5-turbo", 16_385],
  ["gpt-oss", 131_072],
  ["o1-mini", 128_000],
  ["o1", 200_000],
  ["o3", 200_000],
  ["o4-mini", 200_000],
  ["gemini-", 1_048_576],
  ["llama-3.1", 131_072],
  ["llama-3.2", 131_072],
  ["llama-3.3", 131_072],
  ["llama3.1", 131_072],
  ["llama3.2", 131_072],
  ["llama3.3", 131_072],
  ["llama-4", 1_000_000],
  ["llama3", 8_192],
  ["qwen2.5", 32_768],
  ["qwen3", 32_768],
  ["qwen3-coder", 262_144],
  ["mistral-large", 128_000],
  ["mistral-small", 32_768],
  ["mistral", 32_768],
  ["mixtral", 32_768],
  ["codestral", 256_000],
  ["devstral", 128_000],
  ["deepseek-chat", 128_000],
  ["deepseek-reasoner", 128_000],
  ["deepseek-v3", 128_000],
  ["deepseek-r1", 128_000],
  ["deepseek-coder", 128_000],
  ["gemma2", 8_192],
  ["gemma3", 128_000],
  ["phi-4", 16_384],
  ["phi4", 16_384],
];

export type WindowSource = "flag" | "profile" | "table" | "unknown_model";

export interface ContextBudget {
  /** Tokens the model can take in one request. */
  window: number;
  /** Tokens kept free for the reply: a request is at most window - reserve. */
  reserve: number;
  source: WindowSource;
}

/** The table's window for a model id, or undefined when the table does not know it. */
export function knownContextWindow(model: string): number | undefined {
  const id = (model.split("/").at(-1) ?? model).split(":")[0]?.toLowerCase() ?? "";
  let best: readonly [string, number] | undefined;
  for (const entry of KNOWN_WINDOWS) {
    if (id.startsWith(entry[0]) && (best === undefined || entry[0].length > best[0].length)) best = entry;
  }
  return best?.[1];
}

/** The reserve when none is configured: the profile's output limit, else a quarter of the window up to 8K. */
export function defaultReplyReserve(window: number, maxOutputTokens: number | undefined): number {
  return Math.min(maxOutputTokens ?? 8_192, Math.floor(window / 4));
}

export class ContextBudgetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ContextBudgetError";
  }
}

/**
 * The window and reserve for a session: the flag beats the profile beats the table. The
 * reserve must leave room for a request (smaller than the window).
 */
export function resolveContextBudget(input: {
  flag?: number | undefined;
  profile?:
    | {
        context_window?: number | undefined;
        reply_reserve?: number | undefined;
        max_output_tokens?: number | undefined;
      }
    | undefined;
  model?: string | undefined;
}): ContextBudget {
  const known = input.model === undefined ? undefined : knownContextWindow(input.model);
  const [window, source]: [number, WindowSource] =
    input.flag !== undefined
      ? [input.flag, "flag"]
      : input.profile?.context_window !== undefined
        ? [input.profile.context_window, "profile"]
        : known !== undefined
          ? [known, "table"]
          : [UNKNOWN_MODEL_WINDOW, "unknown_model"];
  const configured = input.profile?.reply_reserve;
  const reserve = configured ?? defaultReplyReserve(window, input.profile?.max_output_tokens);
  if (configured !== undefined && configured >= window) {
    throw new ContextBudgetError(
      `reply_reserve (${configured}) must be smaller than the context window (${window} tokens, from the ${source.replace("_", " ")})`,
    );
  }
  return { window, reserve, source };
}
