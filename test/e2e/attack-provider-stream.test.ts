import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EndlessServer, endlessServer } from "../support/endless-server.js";
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

const SENT_MIB = 1024;

type Endless = EndlessServer & { url: string };

async function endlessEndpoint(
  answer: { status: number; type: string; start: string } = {
    status: 200,
    type: "text/event-stream",
    start: "data: ",
  },
): Promise<Endless> {
  const endless = await endlessServer({ ...answer, end: "\n\n", mib: SENT_MIB });
  return { ...endless, url: `${endless.origin}/v1` };
}

async function runAgainst(provider: string, endpoint: Endless) {
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
  return finished(child).finally(() => clearTimeout(timer));
}

async function closed(endpoint: Endless): Promise<void> {
  endpoint.server.closeAllConnections();
  await new Promise<void>((resolve) => endpoint.server.close(() => resolve()));
}

/**
 * The run against `endpoint` stopped with `message` after its one request, not retried, and
 * harness closed the connection before the endpoint had written 128 MiB of its endless answer.
 */
async function expectStoppedReading(provider: string, endpoint: Endless, message: string): Promise<void> {
  try {
    const result = await runAgainst(provider, endpoint);
    expectExit(result, 2);
    expect(jsonSummary(result)).toMatchObject({
      status: "stopped",
      reason: "provider_error",
      model_requests: 1,
    });
    expect(String(jsonSummary(result).message)).toContain(message);
    expect(endpoint.written).toHaveLength(1);
    expect(endpoint.written[0]).toBeLessThan(128);
  } finally {
    await closed(endpoint);
  }
}

describe("a streamed reply whose event never ends", () => {
  for (const provider of ["openai-compatible", "anthropic", "openai"]) {
    it(`${provider}: reading stops past 64 MiB, the run stops with the reason, nothing is retried`, async () => {
      await expectStoppedReading(
        provider,
        await endlessEndpoint(),
        "malformed response: the stream sent more than 67108864 characters without completing an event",
      );
    }, 120_000);
  }
});

describe("an error answer with an endless body", () => {
  // The AI SDK reads an error body whole into one string: 2.5 GB of memory for a 1 GiB body.
  for (const provider of ["anthropic", "openai"]) {
    it(`${provider}: reading stops past 64 MiB and the run stops with the reason`, async () => {
      const endpoint = await endlessEndpoint({
        status: 400,
        type: "application/json",
        start: '{"error":{"message":"',
      });
      await expectStoppedReading(
        provider,
        endpoint,
        "malformed response: the response body passed 67108864 bytes",
      );
    }, 120_000);
  }
});
