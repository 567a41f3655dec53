import { existsSync } from "node:fs";
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
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
} from "./helpers.js";

/*
 * A hostile (or broken) endpoint starts a reply with a tool call, then keeps the stream open for
 * ever with SSE comments and empty deltas. Before the bound nothing ended it: keep-alives reset the
 * idle timer and there was no overall deadline. Now every model request has a deadline (set short
 * here with --request-deadline): the run stops with the provider error, the journal records each
 * attempt's failure, and the half-streamed call never runs.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

interface Endpoint {
  server: Server;
  url: string;
  requests: number;
}

/** Serves `answer` to every chat completions request. */
async function endpoint(answer: (write: (text: string) => void, end: (text: string) => void) => () => void) {
  const state: Endpoint = { server: createServer(), url: "", requests: 0 };
  state.server.on("request", (request, response) => {
    state.requests += 1;
    request.resume();
    response.writeHead(200, { "content-type": "text/event-stream" });
    const stop = answer(
      (text) => response.write(text),
      (text) => response.end(text),
    );
    response.on("close", stop);
  });
  await new Promise<void>((resolve) => state.server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}/v1`;
  return state;
}

async function close(state: Endpoint): Promise<void> {
  state.server.closeAllConnections();
  await new Promise<void>((resolve) => state.server.close(() => resolve()));
}

async function run(url: string, workspace: string, deadline: string) {
  const config = join(await tempDir("harness-config-"), "config.json");
  await writeFile(config, "{}");
  const child = startHarness(
    [
      "run",
      ...["--provider", "openai-compatible", "--model", "m", "--base-url", url],
      ...["--request-deadline", deadline, "--shell", "allow", "--write", "allow"],
      ...["--workspace", workspace, "--json", "go"],
    ],
    { env: { ...childEnv(), HARNESS_CONFIG: config } },
  );
  const guard = setTimeout(() => child.kill("SIGKILL"), 90_000);
  return finished(child).finally(() => clearTimeout(guard));
}

describe("a provider stream kept alive without end", { timeout: 120_000 }, () => {
  it("ends at the request deadline: structured TIMEOUT, every attempt journaled, the streamed call never runs", async () => {
    const workspace = await tempDir("harness-ws-");
    const server = await endpoint((write) => {
      write(
        chunk({
          tool_calls: [
            {
              index: 0,
              id: "call_1",
              type: "function",
              function: { name: "shell", arguments: JSON.stringify({ command: "touch pwned" }) },
            },
          ],
        }),
      );
      let beat = 0;
      const timer = setInterval(() => {
        write(beat % 2 === 0 ? ": keep-alive\n\n" : chunk({ content: "" }));
        beat += 1;
      }, 50);
      return () => clearInterval(timer);
    });
    try {
      const result = await run(server.url, workspace, "700");
      expectExit(result, 2);
      const summary = jsonSummary(result);
      expect(summary).toMatchObject({ status: "stopped", reason: "provider_error" });
      expect(String(summary.message)).toContain("overall deadline of 700 ms");
      const id = String(summary.session);
      const records = await readJournal(workspace, id);
      const failures = [...ofType(records, "model.retryable_error"), ...ofType(records, "model.failed")];
      expect(failures.length).toBe(server.requests);
      expect(failures.length).toBeGreaterThan(1);
      for (const failure of failures) expect(failure.data.code).toBe("TIMEOUT");
      expect(ofType(records, "model.failed")).toHaveLength(1);
      expect(ofType(records, "tool.started")).toEqual([]);
      expect(existsSync(join(workspace, "pwned"))).toBe(false);
    } finally {
      await close(server);
    }
  });

  it("a slow but real stream under the deadline completes and its call runs", async () => {
    const workspace = await tempDir("harness-ws-");
    const server = await endpoint((write, end) => {
      if (server.requests > 1) {
        end(`${chunk({ content: "done" })}${chunk({}, "stop")}data: [DONE]\n\n`);
        return () => undefined;
      }
      const args = JSON.stringify({ command: "touch made" });
      const parts = [...args.match(/.{1,6}/g)!];
      let index = -1;
      const timer = setInterval(() => {
        index += 1;
        if (index === 0) {
          write(
            chunk({
              tool_calls: [
                { index: 0, id: "call_1", type: "function", function: { name: "shell", arguments: "" } },
              ],
            }),
          );
        } else if (index <= parts.length) {
          write(chunk({ tool_calls: [{ index: 0, function: { arguments: parts[index - 1] } }] }));
        } else {
          clearInterval(timer);
          end(`${chunk({}, "tool_calls")}data: [DONE]\n\n`);
        }
      }, 80);
      return () => clearInterval(timer);
    });
    try {
      const result = await run(server.url, workspace, "20000");
      expectExit(result, 0);
      expect(existsSync(join(workspace, "made"))).toBe(true);
    } finally {
      await close(server);
    }
  });
});
