import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createAnthropicProvider } from "../../src/providers/anthropic.js";
import { createHttpJsonProvider } from "../../src/providers/http-json.js";
import { createOpenAICompatibleProvider } from "../../src/providers/openai-compatible.js";
import { createOpenAIResponsesProvider } from "../../src/providers/openai-responses.js";
import type { Provider } from "../../src/providers/provider.js";
import { collect, endsNormally, text } from "./helpers/collect.js";

/*
 * A server that keeps a model request alive without finishing it: comments, pings, empty deltas,
 * repeated at an interval. None of that is progress, so an idle timeout fires; without one, the
 * overall deadline ends the request. A stream that sends real content slowly still completes.
 */

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

/** Answer every request with `head`, then `beat` every `everyMs` until the client leaves. */
async function server(
  type: string,
  head: string,
  beats: readonly string[],
  everyMs = 40,
): Promise<{ origin: string; closed: () => Promise<void> }> {
  let arrived = false;
  let closedResolve!: () => void;
  const closed = new Promise<void>((resolve) => {
    closedResolve = resolve;
  });
  const handler = (_req: IncomingMessage, res: ServerResponse) => {
    arrived = true;
    res.writeHead(200, { "content-type": type });
    res.write(head);
    let index = 0;
    const timer = setInterval(() => {
      res.write(beats[index % beats.length] ?? "");
      index += 1;
    }, everyMs);
    res.on("close", () => {
      clearInterval(timer);
      closedResolve();
    });
  };
  const listening = createServer(handler);
  servers.push(listening);
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`,
    // The client dropped the connection (on a loaded machine a timer may fire before it was made).
    closed: () => (arrived ? closed : Promise.resolve()),
  };
}

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

const CHAT = {
  type: "text/event-stream",
  head: `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: "assistant" }, finish_reason: null }] })}\n\n`,
  beats: [
    ": keep-alive\n\n",
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "" }, finish_reason: null }] })}\n\n`,
    `data: ${JSON.stringify({ choices: [] })}\n\n`,
  ],
};

const ANTHROPIC = {
  type: "text/event-stream",
  head:
    event("message_start", {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "m",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
      },
    }) +
    event("content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    }),
  beats: [
    event("ping", { type: "ping" }),
    ": keep-alive\n\n",
    event("content_block_delta", {
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: "" },
    }),
  ],
};

const RESPONSES_FIXTURE = readFileSync(
  join(import.meta.dirname, "fixtures/openai-responses/text.sse"),
  "utf8",
);
const RESPONSES = {
  type: "text/event-stream",
  head: `${RESPONSES_FIXTURE.split("\n\n")[0]}\n\n`,
  beats: [": keep-alive\n\n", `${RESPONSES_FIXTURE.split("\n\n")[1]}\n\n`],
};

type Make = (origin: string, limits: { timeoutMs?: number; deadlineMs?: number }) => Provider;

const ADAPTERS: [string, typeof CHAT, Make][] = [
  [
    "openai-compatible",
    CHAT,
    (origin, limits) => createOpenAICompatibleProvider({ model: "m", baseUrl: `${origin}/v1`, ...limits }),
  ],
  [
    "anthropic",
    ANTHROPIC,
    (origin, limits) => createAnthropicProvider({ model: "m", baseUrl: `${origin}/v1`, ...limits }),
  ],
  [
    "openai",
    RESPONSES,
    (origin, limits) => createOpenAIResponsesProvider({ model: "m", baseUrl: `${origin}/v1`, ...limits }),
  ],
];

describe("a stream kept alive without content", () => {
  for (const [name, wire, make] of ADAPTERS) {
    it(`${name}: keep-alives are not progress, so the idle timeout ends it`, async () => {
      const { origin, closed } = await server(wire.type, wire.head, wire.beats);
      const started = Date.now();
      const { events, error } = await collect(make(origin, { timeoutMs: 400 }));
      expect(error?.code).toBe("TIMEOUT");
      expect(error?.providerCode).toBeUndefined();
      expect(endsNormally(events)).toBe(false);
      expect(Date.now() - started).toBeLessThan(10_000);
      await closed();
    });

    it(`${name}: without an idle timeout the overall deadline ends it with a structured, retryable error`, async () => {
      const { origin, closed } = await server(wire.type, wire.head, wire.beats);
      const { events, error } = await collect(make(origin, { deadlineMs: 700 }));
      expect(error?.code).toBe("TIMEOUT");
      expect(error?.providerCode).toBe("request_deadline");
      expect(error?.retryable).toBe(true);
      expect(error?.message).toContain("overall deadline of 700 ms");
      expect(error?.message).toContain("--request-deadline");
      expect(events.some((e) => e.type === "end")).toBe(false);
      await closed();
    });
  }

  it("http-json: an answer that never completes ends at the deadline", async () => {
    const { origin, closed } = await server("application/json", "{", [" "]);
    const provider = createHttpJsonProvider({ model: "rules", url: `${origin}/act`, deadlineMs: 700 });
    const { events, error } = await collect(provider);
    expect(error?.code).toBe("TIMEOUT");
    expect(error?.providerCode).toBe("request_deadline");
    expect(events).toEqual([]);
    await closed();
  });

  it("a real stream trickling in under the deadline still completes, each content event restarting the idle timer", async () => {
    const words = Array.from({ length: 8 }, (_, i) => `w${i} `);
    const chunks = words.map(
      (word) =>
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: word }, finish_reason: null }] })}\n\n`,
    );
    let sent = 0;
    const handler = (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const timer = setInterval(() => {
        if (sent < chunks.length) {
          res.write(chunks[sent]!);
          sent += 1;
          return;
        }
        clearInterval(timer);
        res.end(
          `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`,
        );
      }, 120);
      res.on("close", () => clearInterval(timer));
    };
    const listening = createServer(handler);
    servers.push(listening);
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    // The whole stream takes about a second, each gap 120 ms: longer than one idle period would
    // allow if it counted from the start, well under the idle timeout between events.
    const provider = createOpenAICompatibleProvider({
      model: "m",
      baseUrl: `${origin}/v1`,
      timeoutMs: 600,
      deadlineMs: 10_000,
    });
    const { events, error } = await collect(provider);
    expect(error).toBeUndefined();
    expect(text(events)).toBe(words.join(""));
    expect(endsNormally(events)).toBe(true);
  });
});
