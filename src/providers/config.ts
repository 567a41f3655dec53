import { z } from "zod";
import { digestOf } from "../shared/hash.js";
import { tokenCountSchema } from "./context-window.js";
import {
  ANTHROPIC_DEFAULT_BASE_URL,
  isLoopbackUrl,
  OPENAI_DEFAULT_BASE_URL,
  parseEndpoint,
  publicUrl,
} from "./endpoint.js";
import type { ModelRequest, Provider, ProviderIdentity } from "./provider.js";
import { DEFAULT_REQUEST_DEADLINE_MS } from "./request-deadline.js";

export const PROVIDER_KINDS = ["openai-compatible", "openai", "anthropic", "http-json"] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name (letters, digits, _)");

const endpoint = z.string().refine(
  (value) => {
    try {
      parseEndpoint(value);
      return true;
    } catch {
      return false;
    }
  },
  { message: "must be an absolute http(s) URL" },
);

const pricePerMtok = z.number().nonnegative().finite();

/**
 * What the user pays the provider, in US dollars per million tokens. Only ever from the user's
 * profile: harness never guesses a price, so without these no cost is shown.
 */
export const modelPricesSchema = z.strictObject({
  input_per_mtok: pricePerMtok,
  output_per_mtok: pricePerMtok,
  /** Input tokens read from the provider's cache (default: the input price). */
  cached_input_per_mtok: pricePerMtok.optional(),
});
export type ModelPrices = z.infer<typeof modelPricesSchema>;

/** One named model profile. Keys are never part of a profile: only the variable holding one. */
export const modelProfileSchema = z.strictObject({
  provider: z.enum(PROVIDER_KINDS),
  model: z.string().min(1),
  base_url: endpoint.optional(),
  api_key_env: envName.optional(),
  max_output_tokens: z.number().int().positive().optional(),
  timeout_ms: z.number().int().positive().optional(),
  /** Longest time one model request may take, stream included (default ten minutes). */
  request_deadline_ms: z.number().int().positive().optional(),
  /** Anthropic only: enable extended thinking with this budget. */
  thinking_budget_tokens: z.number().int().min(1024).optional(),
  /** Tokens the model takes in one request (default: the table in context-window.ts). */
  context_window: tokenCountSchema.optional(),
  /** Tokens kept free for the reply (default: max_output_tokens, at most a quarter of the window). */
  reply_reserve: tokenCountSchema.optional(),
  prices: modelPricesSchema.optional(),
  /**
   * openai-compatible only: the model takes image input, so images are sent as `image_url`
   * content parts (default false: each image is a line saying it was not shown).
   */
  image_input: z.boolean().optional(),
});
export type ModelProfile = z.infer<typeof modelProfileSchema>;

/** Named profiles, e.g. `{ "fast": {...}, "deep": {...} }`. */
export const modelProfilesSchema = z.record(z.string().regex(/^[A-Za-z0-9_.-]+$/), modelProfileSchema);

/** A profile that cannot become a provider. The message names fields and variables, never values. */
export class ProviderConfigError extends Error {
  override readonly name = "ProviderConfigError";
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** Default key variables. openai-compatible has none: sending OPENAI_API_KEY to a third-party URL would leak it. */
export const DEFAULT_KEY_ENV: Partial<Record<ProviderKind, string>> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
};

export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Build a provider from an (untrusted) profile and the environment. The key is read from
 * `api_key_env` or the provider's default variable; a loopback endpoint needs none.
 */
export function createProvider(profile: unknown, env: Environment): Provider {
  const parsed = parseProfile(profile);
  if (parsed.thinking_budget_tokens !== undefined && parsed.provider !== "anthropic") {
    throw new ProviderConfigError(
      "thinking_budget_tokens",
      "thinking_budget_tokens applies to anthropic only",
    );
  }
  if (parsed.image_input !== undefined && parsed.provider !== "openai-compatible") {
    // Anthropic and OpenAI Responses always take images; the flag would mislead there.
    throw new ProviderConfigError("image_input", "image_input applies to openai-compatible only");
  }
  const baseUrl = requiredBaseUrl(parsed);
  const apiKey = resolveApiKey(parsed, baseUrl, env);
  const common = {
    model: parsed.model,
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(parsed.timeout_ms === undefined ? {} : { timeoutMs: parsed.timeout_ms }),
    deadlineMs: parsed.request_deadline_ms ?? DEFAULT_REQUEST_DEADLINE_MS,
  };
  const maxOutput =
    parsed.max_output_tokens === undefined ? {} : { maxOutputTokens: parsed.max_output_tokens };
  // The vendor SDK is loaded on the first request, not here: a run that never reaches the model
  // (a usage error, a resumed finished session) and every scripted run stay free of it.
  switch (parsed.provider) {
    case "openai-compatible":
      return lazyProvider(identityOf("openai-compatible", parsed.model, baseUrl ?? ""), async () =>
        (await import("./openai-compatible.js")).createOpenAICompatibleProvider({
          ...common,
          ...maxOutput,
          baseUrl: baseUrl ?? "",
          promptCacheKey: isOpenAIEndpoint(baseUrl),
          imageInput: parsed.image_input === true,
        }),
      );
    case "openai":
      return lazyProvider(identityOf("openai", parsed.model, baseUrl ?? OPENAI_DEFAULT_BASE_URL), async () =>
        (await import("./openai-responses.js")).createOpenAIResponsesProvider({
          ...common,
          ...maxOutput,
          ...(baseUrl === undefined ? {} : { baseUrl }),
        }),
      );
    case "anthropic":
      return lazyProvider(
        identityOf("anthropic", parsed.model, baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL),
        async () =>
          (await import("./anthropic.js")).createAnthropicProvider({
            ...common,
            ...maxOutput,
            ...(baseUrl === undefined ? {} : { baseUrl }),
            ...(parsed.thinking_budget_tokens === undefined
              ? {}
              : { thinkingBudgetTokens: parsed.thinking_budget_tokens }),
          }),
      );
    case "http-json":
      return lazyProvider(identityOf("http-json", parsed.model, baseUrl ?? ""), async () =>
        (await import("./http-json.js")).createHttpJsonProvider({ ...common, url: baseUrl ?? "" }),
      );
  }
}

/** OpenAI's own API, where Chat Completions is known to accept `prompt_cache_key`. */
export function isOpenAIEndpoint(baseUrl: string | undefined): boolean {
  if (baseUrl === undefined) return false;
  try {
    return new URL(baseUrl).hostname === new URL(OPENAI_DEFAULT_BASE_URL).hostname;
  } catch {
    return false;
  }
}

function identityOf(kind: ProviderKind, model: string, baseUrl: string): ProviderIdentity {
  return { kind, model, base_url: publicUrl(baseUrl) };
}

/**
 * A provider whose implementation is loaded on first use. Its identity is known up front (it is
 * part of the session identity) and must equal the loaded provider's, which is checked.
 */
function lazyProvider(identity: ProviderIdentity, load: () => Promise<Provider>): Provider {
  let loading: Promise<Provider> | undefined;
  const loaded = async () => {
    loading ??= load();
    const provider = await loading;
    if (digestOf(provider.identity) !== digestOf(identity)) {
      throw new Error(`provider identity mismatch for ${identity.kind}`);
    }
    return provider;
  };
  return {
    identity,
    async *stream(request: ModelRequest, signal: AbortSignal) {
      yield* (await loaded()).stream(request, signal);
    },
  };
}

/** Validate a profile; the error lists each bad field with its problem (values are not echoed). */
export function parseProfile(profile: unknown): ModelProfile {
  const result = modelProfileSchema.safeParse(profile);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue?.path.join(".") || "profile";
  if (field === "provider") {
    throw new ProviderConfigError(
      "provider",
      `unknown or missing provider; expected one of: ${PROVIDER_KINDS.join(", ")}`,
    );
  }
  const problems = result.error.issues
    .map((i) => `${i.path.join(".") || "profile"}: ${i.message}`)
    .join("; ");
  throw new ProviderConfigError(field, `invalid model profile: ${problems}`);
}

function requiredBaseUrl(profile: ModelProfile): string | undefined {
  if (profile.base_url !== undefined) return profile.base_url;
  if (profile.provider === "openai-compatible" || profile.provider === "http-json") {
    throw new ProviderConfigError("base_url", `provider ${profile.provider} needs base_url`);
  }
  return undefined;
}

function resolveApiKey(
  profile: ModelProfile,
  baseUrl: string | undefined,
  env: Environment,
): string | undefined {
  const variable = profile.api_key_env ?? DEFAULT_KEY_ENV[profile.provider];
  const value = variable === undefined ? undefined : env[variable];
  if (value !== undefined && value.trim() !== "") return value.trim();
  const loopback = baseUrl !== undefined && isLoopbackUrl(baseUrl);
  if (loopback) return undefined;
  if (profile.provider === "http-json" && profile.api_key_env === undefined) return undefined;
  if (variable === undefined) {
    throw new ProviderConfigError(
      "api_key_env",
      `provider ${profile.provider} at a non-local base_url needs api_key_env: the name of the environment variable holding its key`,
    );
  }
  throw new ProviderConfigError("api_key_env", `missing API key: set the environment variable ${variable}`);
}
