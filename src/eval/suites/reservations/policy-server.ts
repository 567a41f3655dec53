import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import type { ModelMessage } from "../../../protocol/types.js";
import { TOOL_STATUSES } from "../../../protocol/types.js";
import { jsonObjectSchema } from "../../../shared/json.js";
import { type DecisionPolicy, httpActionFor } from "./workflow.js";

/**
 * A small local policy server for the http-json adapter: `POST /<policy name>` with the body
 * `{"messages": [...], "tools": [...]}` answers one action. It serves decision sources over
 * HTTP so the same runtime and executor checks apply to a policy in another process.
 * Listens on 127.0.0.1 only.
 */

const MAX_BODY_BYTES = 4 * 1024 * 1024;

const toolStatus = z.enum(TOOL_STATUSES);
const messageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: z.string() }),
  z.object({ role: z.literal("user"), content: z.string() }),
  z.object({
    role: z.literal("assistant"),
    content: z.string(),
    calls: z.array(z.object({ id: z.string(), name: z.string(), arguments: jsonObjectSchema })),
  }),
  z.object({
    role: z.literal("tool"),
    call_id: z.string(),
    name: z.string(),
    status: toolStatus,
    content: z.string(),
  }),
]);
const requestSchema = z.object({ messages: z.array(messageSchema), tools: z.array(z.unknown()) });

export interface PolicyServer {
  /** Base URL, e.g. http://127.0.0.1:PORT */
  readonly origin: string;
  /** The endpoint serving one named policy. */
  url(policy: string): string;
  close(): Promise<void>;
}

export async function startPolicyServer(
  policies: Readonly<Record<string, DecisionPolicy>>,
): Promise<PolicyServer> {
  const server = createServer((request, response) => {
    void handle(policies, request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    url: (policy) => `${origin}/${encodeURIComponent(policy)}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handle(
  policies: Readonly<Record<string, DecisionPolicy>>,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const name = decodeURIComponent((request.url ?? "/").slice(1).split("?")[0] ?? "");
  const policy = Object.hasOwn(policies, name) ? policies[name] : undefined;
  if (request.method !== "POST") return reply(response, 405, { error: { message: "POST only" } });
  if (!policy) return reply(response, 404, { error: { message: `no policy "${name}"` } });
  let body: unknown;
  try {
    body = JSON.parse(await readBody(request));
  } catch {
    return reply(response, 400, { error: { message: "the body is not JSON within 4 MiB" } });
  }
  const parsed = requestSchema.safeParse(body);
  if (!parsed.success) return reply(response, 400, { error: { message: "expected {messages, tools}" } });
  try {
    reply(response, 200, httpActionFor(policy, { messages: parsed.data.messages as ModelMessage[] }));
  } catch {
    reply(response, 500, { error: { message: "the policy failed" } });
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of request) {
    const bytes = chunk as Buffer;
    total += bytes.byteLength;
    if (total > MAX_BODY_BYTES) throw new Error("body too large");
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}
