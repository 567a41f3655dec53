import { z } from "zod";
import { createAnthropicProvider } from "./anthropic.js";
import { isLoopbackUrl, parseEndpoint } from "./endpoint.js";
import { createHttpJsonProvider } from "./http-json.js";
import { createOpenAICompatibleProvider } from "./openai-compatible.js";
import { createOpenAIResponsesProvider } from "./openai-responses.js";
import type { Provider } from "./provider.js";

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

/** One named model profile. Keys are never part of a profile: only the variable holding one. */
export const modelProfileSchema = z.strictObject({
  provider: z.enum(PROVIDER_KINDS),
  model: z.string().min(1),
  base_url: endpoint.optional(),
  api_key_env: envName.optional(),
  max_output_tokens: z.number().int().positive().optional(),
  timeout_ms: z.number().int().positive().optional(),
  /** Anthropic only: enable extended thinking with this budget. */
  thinking_budget_tokens: z.number().int().min(1024).optional(),
});
export type ModelProfile = z.infer<typeof modelProfileSchema>;

/** Named profiles, e.g. `{ "fast": {...}, "deep": {...} }`. */
export const modelProfilesSchema = z.record(z.string().regex(/^[A-Za-z0-9_.-]+$/), modelProfileSchema);

/** A profile that cannot become a provider. The message names fields and variables, never values. */
export class ProviderConfigError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.name = "ProviderConfigError";
    this.field = field;
  }
}

/** Default key variables. openai-compatible has none: sending OPENAI_API_KEY to a third-party URL would leak it. */
const DEFAULT_KEY_ENV: Partial<Record<ProviderKind, string>> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
};

export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Build a provider from an (untrusted) profile and the environment. The key is read from
 * `api_key_env` or the provider's default variable; a loopback endpoint needs none.
 */
export function createProvider(
  profile: unknown,
  env: Environment,
  options: { fetch?: typeof fetch } = {},
): Provider {
  const parsed = parseProfile(profile);
  if (parsed.thinking_budget_tokens !== undefined && parsed.provider !== "anthropic") {
    throw new ProviderConfigError(
      "thinking_budget_tokens",
      "thinking_budget_tokens applies to anthropic only",
    );
  }
  const baseUrl = requiredBaseUrl(parsed);
  const apiKey = resolveApiKey(parsed, baseUrl, env);
  const common = {
    model: parsed.model,
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(parsed.timeout_ms === undefined ? {} : { timeoutMs: parsed.timeout_ms }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  };
  const maxOutput =
    parsed.max_output_tokens === undefined ? {} : { maxOutputTokens: parsed.max_output_tokens };
  switch (parsed.provider) {
    case "openai-compatible":
      return createOpenAICompatibleProvider({ ...common, ...maxOutput, baseUrl: baseUrl ?? "" });
    case "openai":
      return createOpenAIResponsesProvider({
        ...common,
        ...maxOutput,
        ...(baseUrl === undefined ? {} : { baseUrl }),
      });
    case "anthropic":
      return createAnthropicProvider({
        ...common,
        ...maxOutput,
        ...(baseUrl === undefined ? {} : { baseUrl }),
        ...(parsed.thinking_budget_tokens === undefined
          ? {}
          : { thinkingBudgetTokens: parsed.thinking_budget_tokens }),
      });
    case "http-json":
      return createHttpJsonProvider({ ...common, url: baseUrl ?? "" });
  }
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
