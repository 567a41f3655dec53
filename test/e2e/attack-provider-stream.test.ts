import { writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonSummary,
  removeTempDirs,
  startHarness,
  tempDir,
} from "./helpers.js";

/*
 * A hostile endpoint answers a streamed request with `data: ` and then 1 GiB without a newline.
 * Before the bound every provider read all of it into one string: 1.4 GB of memory, then "Invalid
 * string length". Now each stops reading once an event passes 64 MiB, says why, and does not
 * retry (the three providers: our own SSE reader and the AI SDK's, through harness's fetch).
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const MiB = 1024 * 1024;
const SENT_MIB = 1024;

interface Endless {
  server: Server;
  url: string;
  /** MiB written on each request before its connection closed. */
  written: number[];
}

async function endlessEndpoint(): Promise<Endless> {
  const written: number[] = [];
  const chunk = "x".repeat(MiB);
  const server = createServer((request, response) => {
    const index = written.push(0) - 1;
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.write("data: ");
    let stopped = false;
    request.on("close", () => {
      stopped = true;
    });
    response.on("close", () => {
      stopped = true;
    });
    const pump = (): void => {
      while (!stopped && (written[index] ?? 0) < SENT_MIB) {
        written[index] = (written[index] ?? 0) + 1;
        if (!response.write(chunk)) {
          response.once("drain", pump);
          return;
        }
      }
      if (!stopped) response.end("\n\n");
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, written };
}

describe("a streamed reply whose event never ends", () => {
  for (const provider of ["openai-compatible", "anthropic", "openai"]) {
    it(`${provider}: reading stops past 64 MiB, the run stops with the reason, nothing is retried`, async () => {
      const endpoint = await endlessEndpoint();
      try {
        const config = join(await tempDir("harness-config-"), "config.json");
        await writeFile(config, "{}");
        const workspace = await tempDir("harness-ws-");
        const env = {
          ...childEnv(),
          HARNESS_CONFIG: config,
          OPENAI_API_KEY: "sk-test-0000",
          ANTHROPIC_API_KEY: "sk-test-0000",
        };
        const child = startHarness(
          [
            "run",
            "--provider",
            provider,
            "--model",
            "m",
            "--base-url",
            endpoint.url,
            "--workspace",
            workspace,
            "--json",
            "hi",
          ],
          { env },
        );
        const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
        const result = await finished(child).finally(() => clearTimeout(timer));
        expectExit(result, 2);
        expect(jsonSummary(result)).toMatchObject({
          status: "stopped",
          reason: "provider_error",
          model_requests: 1,
        });
        expect(String(jsonSummary(result).message)).toContain(
          "malformed response: the stream sent more than 67108864 characters without completing an event",
        );
        expect(endpoint.written).toHaveLength(1);
        expect(endpoint.written[0]).toBeLessThan(128);
      } finally {
        endpoint.server.closeAllConnections();
        await new Promise<void>((resolve) => endpoint.server.close(() => resolve()));
      }
    }, 120_000);
  }
});
