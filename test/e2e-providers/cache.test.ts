import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  cliEnv,
  ensureBuilt,
  expectExit,
  jsonSummary,
  ofType,
  readJournal,
  removeTemps,
  runCli,
  tempDir,
  workspaceWith,
} from "./cli.js";
import { HELLO_BEFORE, HELLO_FILE, helloRunArgs, helloScript } from "./hello-task.js";
import { type MockRequest, startMockServer } from "./mock-server.js";
import { providerFlags } from "./providers.js";
import type { Dialect } from "./wire.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTemps());

type Body = Record<string, unknown>;

/** Anthropic's breakpoint marker is not part of the cached content: compared without it. */
function withoutCacheControl(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCacheControl);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "cache_control")
      .map(([key, inner]) => [key, withoutCacheControl(inner)]),
  );
}

/** What a provider caches, in the order it is hashed: everything before the conversation, then it. */
function conversation(dialect: Dialect, body: Body): { fixed: string; messages: string } {
  switch (dialect) {
    case "chat":
      return { fixed: JSON.stringify([body.model, body.tools]), messages: JSON.stringify(body.messages) };
    case "responses":
      return {
        fixed: JSON.stringify([body.model, body.instructions, body.tools]),
        messages: JSON.stringify(body.input),
      };
    default:
      return {
        fixed: JSON.stringify(withoutCacheControl([body.model, body.system, body.tools])),
        messages: JSON.stringify(withoutCacheControl(body.messages)),
      };
  }
}

async function helloRequests(dialect: Dialect): Promise<MockRequest[]> {
  const server = await startMockServer({ dialect, script: helloScript() });
  try {
    const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
    const result = await runCli(
      helloRunArgs(providerFlags(dialect, server.baseUrl), workspace, `cache-${dialect}`),
      cliEnv(await tempDir("harness-prov-home-")),
    );
    expectExit(result, 0);
    expect(server.failures).toEqual([]);
    return server.requests;
  } finally {
    await server.close();
  }
}

describe.each<Dialect>(["chat", "responses", "anthropic"])("requests over %s", (dialect) => {
  it("extend the previous request byte for byte, so a provider's prompt cache can serve the prefix", async () => {
    const requests = await helloRequests(dialect);
    expect(requests).toHaveLength(3);
    for (const [i, request] of requests.entries()) {
      if (i === 0) continue;
      const before = conversation(dialect, requests[i - 1]!.body as Body);
      const after = conversation(dialect, request.body as Body);
      expect(after.fixed).toBe(before.fixed);
      // The earlier messages, serialized, are a prefix of the later ones: same bytes, same order.
      const open = before.messages.slice(0, -1);
      expect(after.messages.startsWith(open)).toBe(true);
      expect(after.messages.length).toBeGreaterThan(before.messages.length);
    }
  });
});

describe("provider caching controls", () => {
  it("anthropic: breakpoints on the system block, where the previous request ended, and at the end", async () => {
    const requests = await helloRequests("anthropic");
    type Message = { role: string; content: Body[] };
    const lastBlock = (messages: Message[], i: number) => [i, messages[i]!.content.length - 1];
    for (const [n, request] of requests.entries()) {
      const body = request.body as { system: Body[]; messages: Message[] };
      expect(body.system.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
      const marked = body.messages.flatMap((m, i) =>
        m.content.flatMap((block, j) => (block.cache_control === undefined ? [] : [[i, j]])),
      );
      const last = body.messages.length - 1;
      if (n === 0) {
        expect(marked).toEqual([lastBlock(body.messages, last)]);
        continue;
      }
      // The previous request's last message, at the same position, is marked again: its cache
      // entry is read back; the new end is where this request writes.
      const before = (requests[n - 1]!.body as { messages: Message[] }).messages.length - 1;
      expect(marked).toEqual([lastBlock(body.messages, before), lastBlock(body.messages, last)]);
      for (const [i, j] of marked) {
        expect(body.messages[i!]!.content[j!]!.cache_control).toEqual({ type: "ephemeral" });
      }
    }
  });

  it("openai responses: one prompt_cache_key for every request of the session", async () => {
    const requests = await helloRequests("responses");
    const keys = requests.map((r) => (r.body as Body).prompt_cache_key);
    expect(keys[0]).toMatch(/^harness-[0-9a-f]{32}$/);
    expect(new Set(keys)).toEqual(new Set([keys[0]]));
  });

  it("chat completions: no prompt_cache_key to an endpoint that is not OpenAI's", async () => {
    const requests = await helloRequests("chat");
    for (const request of requests) expect(request.body).not.toHaveProperty("prompt_cache_key");
  });
});

describe("prompt cache usage over anthropic", () => {
  it("is journaled per reply and shown by inspect (per request and total) and in run --json", async () => {
    // Anthropic reports uncached input apart from cache reads and writes; harness records the
    // whole input and, within it, what was read from and written to the cache.
    const usage = [
      { input: 100, output: 10, cached: 0, cacheWrite: 1500 },
      { input: 120, output: 20, cached: 1500, cacheWrite: 300 },
      { input: 90, output: 5, cached: 1800, cacheWrite: 200 },
    ];
    const server = await startMockServer({ dialect: "anthropic", script: helloScript({ usage }) });
    try {
      const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
      const env = cliEnv(await tempDir("harness-prov-home-"));
      const result = await runCli(
        helloRunArgs(providerFlags("anthropic", server.baseUrl), workspace, "cache-usage"),
        env,
      );
      expectExit(result, 0);
      const perReply = usage.map((u) => ({
        input_tokens: u.input + u.cached + u.cacheWrite,
        output_tokens: u.output,
        cached_tokens: u.cached,
        cache_write_tokens: u.cacheWrite,
      }));
      const records = await readJournal(workspace, "cache-usage");
      expect(ofType(records, "model.reply").map((r) => r.data.usage)).toEqual(perReply);
      const total = { input_tokens: 5610, output_tokens: 35, cached_tokens: 3300, cache_write_tokens: 2000 };
      expect(jsonSummary(result)).toMatchObject({ usage: total });

      const inspected = await runCli(["inspect", "cache-usage", "-w", workspace, "--json"], env);
      expectExit(inspected, 0);
      const json = JSON.parse(inspected.stdout) as { usage: unknown; tokens: { requests: unknown[] } };
      expect(json.usage).toMatchObject(total);
      expect(json.tokens.requests).toEqual(
        perReply.map((u, step) =>
          expect.objectContaining({
            step,
            reported_input_tokens: u.input_tokens,
            cached_input_tokens: u.cached_tokens,
            cache_write_tokens: u.cache_write_tokens,
          }),
        ),
      );
      const text = await runCli(["inspect", "cache-usage", "-w", workspace], env);
      expectExit(text, 0);
      expect(text.stdout).toContain("[1920 input tokens, 1500 cached, 300 written to cache]");
      expect(text.stdout).toContain("tokens in 5610 / out 35, cached 3300 read / 2000 written");
    } finally {
      await server.close();
    }
  });
});
