import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { BIN, childEnv, tempDir } from "./helpers.js";

/** What a test's MCP client saw the server ask for (elicitations) and its stderr. */
export interface ServedClient {
  client: Client;
  elicitations: { message: string }[];
  stderr: () => string;
  close(): Promise<void>;
}

export interface ClientOptions {
  /** How the client answers an elicitation; without it, the client declares no elicitation capability. */
  elicit?: (params: { message: string }) => Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Pin the 2026-07-28 protocol revision instead of the default 2025 handshake. */
  modern?: boolean;
  /** The user config the server reads (default: an empty one). */
  config?: Record<string, unknown>;
}

/** An environment whose user config is an empty temp file, never the real one. */
export async function serveEnv(content: Record<string, unknown> = {}): Promise<Record<string, string>> {
  const dir = await tempDir("harness-mcp-config-");
  const config = join(dir, "config.json");
  const { writeFile } = await import("node:fs/promises");
  await writeFile(config, `${JSON.stringify(content)}\n`);
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(childEnv())) if (value !== undefined) env[key] = value;
  env.HARNESS_CONFIG = config;
  return env;
}

/** `harness mcp serve ARGS` from the built CLI, connected to the official client SDK over stdio. */
export async function connectServe(
  args: readonly string[],
  options: ClientOptions = {},
): Promise<ServedClient> {
  const elicitations: { message: string }[] = [];
  const client = new Client(
    { name: "harness-e2e", version: "1" },
    {
      capabilities: options.elicit ? { elicitation: {} } : {},
      ...(options.modern ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
    },
  );
  if (options.elicit) {
    const answer = options.elicit;
    client.setRequestHandler("elicitation/create", async (request) => {
      const params = request.params as { message: string };
      elicitations.push({ message: params.message });
      return (await answer(params)) as { action: "accept" | "decline" | "cancel" };
    });
  }
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "serve", ...args],
    env: await serveEnv(options.config),
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  await client.connect(transport);
  return { client, elicitations, stderr: () => stderr, close: () => client.close() };
}

/** The text of a tool result's first content block. */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((block) => block.text ?? "").join("\n");
}

/** The structured facts harness attaches to a governed call's result. */
export function factsOf(result: unknown): {
  session: string;
  call_id: string;
  status: string;
  error_type?: string;
} {
  return (
    result as { structuredContent: { session: string; call_id: string; status: string; error_type?: string } }
  ).structuredContent;
}
