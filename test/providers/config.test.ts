import { describe, expect, it } from "vitest";
import {
  createProvider,
  isOpenAIEndpoint,
  modelProfilesSchema,
  ProviderConfigError,
} from "../../src/providers/config.js";
import { collect } from "./helpers/collect.js";
import { JSON_HEADERS, startServer } from "./helpers/server.js";

const CANARY = "sk-canary-DO-NOT-LEAK-1234";

function configError(profile: unknown, env: Record<string, string> = {}): ProviderConfigError {
  try {
    createProvider(profile, env);
  } catch (error) {
    if (error instanceof ProviderConfigError) return error;
    throw error;
  }
  throw new Error("expected a ProviderConfigError");
}

describe("createProvider", () => {
  it("builds each provider kind with an identity that holds no key, credentials or query", () => {
    const env = { OPENAI_API_KEY: CANARY, ANTHROPIC_API_KEY: CANARY, DEEPSEEK_KEY: CANARY };
    const identities = [
      createProvider({ provider: "openai", model: "gpt-5" }, env).identity,
      createProvider({ provider: "anthropic", model: "claude-x" }, env).identity,
      createProvider(
        {
          provider: "openai-compatible",
          model: "deepseek-chat",
          base_url: "https://user:pw@api.deepseek.com/v1?key=q",
          api_key_env: "DEEPSEEK_KEY",
        },
        env,
      ).identity,
      createProvider({ provider: "http-json", model: "rules", base_url: "http://127.0.0.1:9/policy" }, {})
        .identity,
    ];
    expect(identities).toEqual([
      { kind: "openai", model: "gpt-5", base_url: "https://api.openai.com/v1" },
      { kind: "anthropic", model: "claude-x", base_url: "https://api.anthropic.com/v1" },
      { kind: "openai-compatible", model: "deepseek-chat", base_url: "https://api.deepseek.com/v1" },
      { kind: "http-json", model: "rules", base_url: "http://127.0.0.1:9/policy" },
    ]);
    expect(JSON.stringify(identities)).not.toContain(CANARY);
  });

  it("a missing key names the variable to set, never a value", () => {
    const error = configError({ provider: "anthropic", model: "claude-x" }, { OPENAI_API_KEY: CANARY });
    expect(error.message).toContain("ANTHROPIC_API_KEY");
    expect(error.field).toBe("api_key_env");
    const named = configError(
      { provider: "openai", model: "m", api_key_env: "MY_KEY" },
      { OPENAI_API_KEY: CANARY },
    );
    expect(named.message).toContain("MY_KEY");
    expect(named.message).not.toContain(CANARY);
  });

  it("openai-compatible never borrows OPENAI_API_KEY for a remote URL", () => {
    const error = configError(
      { provider: "openai-compatible", model: "m", base_url: "https://api.groq.com/openai/v1" },
      { OPENAI_API_KEY: CANARY },
    );
    expect(error.message).toContain("api_key_env");
    expect(error.message).not.toContain(CANARY);
  });

  it("loopback endpoints need no key", () => {
    for (const base_url of [
      "http://127.0.0.1:11434/v1",
      "http://localhost:8080/v1",
      "http://[::1]:8000/v1",
    ]) {
      expect(
        createProvider({ provider: "openai-compatible", model: "llama", base_url }, {}).identity.kind,
      ).toBe("openai-compatible");
      expect(createProvider({ provider: "anthropic", model: "c", base_url }, {}).identity.kind).toBe(
        "anthropic",
      );
    }
  });

  it("rejects unknown providers, unknown fields, bad URLs and misplaced options clearly", () => {
    expect(configError({ provider: "gemini", model: "x" }).message).toContain(
      "openai-compatible, openai, anthropic, http-json",
    );
    expect(configError({ provider: "openai", model: "x", api_key: CANARY }).message).not.toContain(CANARY);
    expect(configError({ provider: "openai-compatible", model: "x" }).field).toBe("base_url");
    expect(configError({ provider: "openai", model: "x", base_url: "ftp://h/v1" }).field).toBe("base_url");
    expect(
      configError({ provider: "openai", model: "x", thinking_budget_tokens: 2048 }, { OPENAI_API_KEY: "k" })
        .field,
    ).toBe("thinking_budget_tokens");
    expect(configError({ provider: "openai", model: "x", max_output_tokens: 1.5 }).field).toBe(
      "max_output_tokens",
    );
  });

  it("named profiles validate as a record", () => {
    const parsed = modelProfilesSchema.safeParse({
      fast: { provider: "openai", model: "m" },
      local: { provider: "openai-compatible", model: "l", base_url: "http://127.0.0.1:1/v1" },
    });
    expect(parsed.success).toBe(true);
    expect(modelProfilesSchema.safeParse({ bad: { provider: "openai" } }).success).toBe(false);
  });

  it("the key read from the environment is what reaches the server", async () => {
    const server = await startServer([
      { status: 401, headers: JSON_HEADERS, body: '{"error":{"message":"no"}}' },
    ]);
    try {
      const provider = createProvider(
        {
          provider: "openai-compatible",
          model: "m",
          base_url: `${server.origin}/v1`,
          api_key_env: "LOCAL_KEY",
        },
        { LOCAL_KEY: CANARY },
      );
      const { error } = await collect(provider);
      expect(error?.code).toBe("AUTH");
      expect(server.received[0]?.headers.authorization).toBe(`Bearer ${CANARY}`);
    } finally {
      await server.close();
    }
  });
});

describe("which Chat Completions endpoints get prompt_cache_key", () => {
  it("only OpenAI's own API", () => {
    expect(isOpenAIEndpoint("https://api.openai.com/v1")).toBe(true);
    expect(isOpenAIEndpoint("https://api.deepseek.com/v1")).toBe(false);
    expect(isOpenAIEndpoint("https://api.openai.com.evil.example/v1")).toBe(false);
    expect(isOpenAIEndpoint("http://127.0.0.1:8080/v1")).toBe(false);
    expect(isOpenAIEndpoint("not a url")).toBe(false);
    expect(isOpenAIEndpoint(undefined)).toBe(false);
  });
});
