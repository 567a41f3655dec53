import type { Dialect } from "./wire.js";

/** The CLI's provider kinds and the wire dialect each one speaks. */
export const PROVIDERS: readonly { provider: string; dialect: Dialect; model: string }[] = [
  { provider: "openai-compatible", dialect: "chat", model: "mock-chat-model" },
  { provider: "openai", dialect: "responses", model: "mock-responses-model" },
  { provider: "anthropic", dialect: "anthropic", model: "mock-claude" },
  { provider: "http-json", dialect: "http-json", model: "rules-v1" },
];

export function providerFor(dialect: Dialect): { provider: string; dialect: Dialect; model: string } {
  const found = PROVIDERS.find((p) => p.dialect === dialect);
  if (found === undefined) throw new Error(`no provider speaks ${dialect}`);
  return found;
}

/** `--provider … --model … --base-url …` for a server of the given dialect. */
export function providerFlags(dialect: Dialect, baseUrl: string): string[] {
  const { provider, model } = providerFor(dialect);
  return ["--provider", provider, "--model", model, "--base-url", baseUrl];
}
