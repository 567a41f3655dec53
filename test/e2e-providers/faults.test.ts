import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  cliEnv,
  ensureBuilt,
  expectExit,
  fileCount,
  filesContaining,
  type JournalLine,
  jsonSummary,
  ofType,
  readJournal,
  removeTemps,
  runCli,
  tempDir,
  workspaceWith,
} from "./cli.js";
import {
  HARNESS_TOOLS,
  HELLO_AFTER,
  HELLO_BEFORE,
  HELLO_FILE,
  HELLO_GOAL,
  helloRunArgs,
  helloScript,
  readVersion,
} from "./hello-task.js";
import { type MockServer, type Script, startMockServer } from "./mock-server.js";
import { providerFlags } from "./providers.js";
import type { Dialect } from "./wire.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTemps());

interface Outcome {
  result: CliResult;
  records: JournalLine[];
  workspace: string;
  server: MockServer;
}

/** Run the hello task against a scripted server; the server is closed before returning. */
async function runHello(
  dialect: Dialect,
  script: Script,
  options: { session: string; env?: Record<string, string>; flags?: string[] },
): Promise<Outcome> {
  const server = await startMockServer({ dialect, script });
  try {
    const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
    const result = await runCli(
      helloRunArgs(
        [...providerFlags(dialect, server.baseUrl), ...(options.flags ?? [])],
        workspace,
        options.session,
      ),
      cliEnv(await tempDir("harness-prov-home-"), options.env),
    );
    const records = await readJournal(workspace, options.session);
    return { result, records, workspace, server };
  } finally {
    await server.close();
  }
}

function attemptsOf(records: readonly JournalLine[], step: number): unknown[] {
  return ofType(records, "model.started")
    .filter((r) => r.data.step === step)
    .map((r) => r.data.attempt);
}

async function fileBytes(workspace: string): Promise<Buffer> {
  return readFile(join(workspace, HELLO_FILE));
}

describe.each<Dialect>(["chat", "responses", "anthropic", "http-json"])(
  "a connection cut in the middle of the edit's arguments (%s)",
  (dialect) => {
    it("is TRANSPORT, journaled with its evidence, retried once, and the task is verified", async () => {
      const { result, records, workspace, server } = await runHello(
        dialect,
        helloScript({
          inject: (request) =>
            request.step === 1 && request.attempt === 0
              ? {
                  kind: "cut",
                  call: {
                    id: "call_edit_1",
                    name: "edit_file",
                    argumentsPrefix: HARNESS_TOOLS.truncatedEditArgs(HELLO_FILE, readVersion(request)),
                  },
                }
              : undefined,
        }),
        { session: `cut-connection-${dialect}` },
      );
      expectExit(result, 0);
      expect(server.failures).toEqual([]);
      expect(await fileBytes(workspace)).toEqual(Buffer.from(HELLO_AFTER));
      expect(attemptsOf(records, 1)).toEqual([0, 1]);
      const retries = ofType(records, "model.retryable_error");
      expect(retries).toHaveLength(1);
      expect(retries[0]?.data).toMatchObject({ step: 1, attempt: 0, code: "TRANSPORT" });
      // Streaming dialects had parsed part of the call before the cut; it is kept, never run.
      if (dialect !== "http-json") {
        expect(retries[0]?.data).toMatchObject({ evidence: { calls: [{ name: "edit_file" }] } });
      }
      expect(ofType(records, "tool.started").map((r) => r.data.name)).toEqual(["read_file", "edit_file"]);
      expect(server.requests).toHaveLength(4);
      expect(jsonSummary(result)).toMatchObject({ status: "verified", model_requests: 4 });
    });
  },
);

describe("retryable failures are journaled, retried and counted", () => {
  it("429 with Retry-After: 1 waits at least a second, then succeeds", async () => {
    const body = await readFile(
      new URL("../providers/fixtures/errors/openai-429-rate-limit-tokens.body", import.meta.url),
      "utf8",
    );
    const { result, records, server } = await runHello(
      "chat",
      helloScript({
        inject: (request) =>
          request.step === 0 && request.attempt === 0
            ? { kind: "http_error", status: 429, headers: { "retry-after": "1" }, body }
            : undefined,
      }),
      { session: "rate-limited" },
    );
    expectExit(result, 0);
    expect(server.failures).toEqual([]);
    expect(attemptsOf(records, 0)).toEqual([0, 1]);
    const retries = ofType(records, "model.retryable_error");
    expect(retries).toHaveLength(1);
    expect(retries[0]?.data).toMatchObject({ code: "RATE_LIMIT", status: 429 });
    expect(retries[0]?.data.retry_in_ms).toBeGreaterThanOrEqual(1000);
    expect(jsonSummary(result)).toMatchObject({ status: "verified", model_requests: 4 });
  });

  it("an overloaded error event inside a 200 stream keeps the partial call as evidence and retries", async () => {
    const { result, records, workspace, server } = await runHello(
      "anthropic",
      helloScript({
        inject: (request) =>
          request.step === 1 && request.attempt === 0
            ? {
                kind: "stream_error",
                call: {
                  id: "toolu_edit_1",
                  name: "edit_file",
                  argumentsPrefix: HARNESS_TOOLS.truncatedEditArgs(HELLO_FILE, readVersion(request)),
                },
                error: { type: "overloaded_error", message: "Overloaded" },
              }
            : undefined,
      }),
      { session: "stream-error" },
    );
    expectExit(result, 0);
    expect(server.failures).toEqual([]);
    expect(await fileBytes(workspace)).toEqual(Buffer.from(HELLO_AFTER));
    expect(attemptsOf(records, 1)).toEqual([0, 1]);
    expect(ofType(records, "model.retryable_error")[0]?.data).toMatchObject({
      code: "OVERLOADED",
      evidence: { calls: [{ name: "edit_file" }] },
    });
    // Only the completed edit ran, once.
    expect(ofType(records, "tool.started").map((r) => r.data.name)).toEqual(["read_file", "edit_file"]);
  });
});

describe("failures that waiting cannot fix stop at once and say what to do", () => {
  it("a quota error inside a 200 stream stops without a retry", async () => {
    const { result, records, workspace } = await runHello(
      "responses",
      helloScript({
        inject: (request) =>
          request.step === 1
            ? {
                kind: "stream_error",
                call: {
                  id: "call_edit_1",
                  name: "edit_file",
                  argumentsPrefix: HARNESS_TOOLS.truncatedEditArgs(HELLO_FILE, readVersion(request)),
                },
                error: {
                  type: "insufficient_quota",
                  code: "insufficient_quota",
                  message: "You exceeded your current quota, please check your plan and billing details.",
                },
              }
            : undefined,
      }),
      { session: "quota" },
    );
    expectExit(result, 2);
    expect(await fileBytes(workspace)).toEqual(Buffer.from(HELLO_BEFORE));
    expect(attemptsOf(records, 1)).toEqual([0]);
    expect(ofType(records, "model.retryable_error")).toEqual([]);
    expect(ofType(records, "model.failed")[0]?.data).toMatchObject({
      code: "QUOTA",
      evidence: { calls: [{ name: "edit_file" }] },
    });
    const summary = jsonSummary(result);
    expect(summary).toMatchObject({ status: "stopped", reason: "provider_error" });
    expect(String(summary.message)).toContain("what to do: the account's quota or credit is used up");
  });

  it("401 stops at once, names the key variable, and the key appears nowhere", async () => {
    const canary = `canary${randomBytes(12).toString("hex")}`;
    const { result, records, workspace, server } = await runHello(
      "chat",
      () => ({
        kind: "http_error",
        status: 401,
        body: JSON.stringify({
          error: {
            message: `Incorrect API key provided: ${canary}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            type: "invalid_request_error",
            param: null,
            code: "invalid_api_key",
          },
        }),
      }),
      { session: "unauthorized", env: { HX_CANARY_KEY: canary }, flags: ["--api-key-env", "HX_CANARY_KEY"] },
    );
    expectExit(result, 2);
    // The key was sent (so the test can find it if it leaks) ...
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${canary}`);
    expect(server.requests).toHaveLength(1);
    expect(attemptsOf(records, 0)).toEqual([0]);
    expect(ofType(records, "model.failed")[0]?.data).toMatchObject({ code: "AUTH", status: 401 });
    const summary = jsonSummary(result);
    expect(summary).toMatchObject({ status: "stopped", reason: "provider_error" });
    expect(String(summary.message)).toContain("check the API key in the environment variable HX_CANARY_KEY");
    // ... and it is absent from every file of the session and from the CLI's output.
    const harnessDir = join(workspace, ".harness");
    expect(await fileCount(harnessDir)).toBeGreaterThan(0);
    expect(await filesContaining(harnessDir, canary)).toEqual([]);
    expect(result.stdout).not.toContain(canary);
    expect(result.stderr).not.toContain(canary);
    expect(await fileBytes(workspace)).toEqual(Buffer.from(HELLO_BEFORE));
  });

  it("a context-window overflow stops with CONTEXT_WINDOW_EXCEEDED and no retry", async () => {
    const body = await readFile(
      new URL("../providers/fixtures/errors/openai-400-context-length-exceeded.body", import.meta.url),
      "utf8",
    );
    const { result, records } = await runHello(
      "chat",
      (request) => (request.step === 0 ? helloScript()(request) : { kind: "http_error", status: 400, body }),
      { session: "overflow" },
    );
    expectExit(result, 2);
    expect(attemptsOf(records, 1)).toEqual([0]);
    expect(ofType(records, "model.failed")[0]?.data).toMatchObject({
      code: "CONTEXT_WINDOW_EXCEEDED",
      status: 400,
    });
    const summary = jsonSummary(result);
    expect(summary).toMatchObject({ status: "stopped", reason: "provider_error", model_requests: 2 });
    expect(String(summary.message)).toContain("what to do: the conversation no longer fits");
  });
});

describe("keys come only from the environment", () => {
  it("a key passed as a flag is refused without echoing it", async () => {
    const canary = `canary${randomBytes(12).toString("hex")}`;
    const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
    const result = await runCli(
      [
        "run",
        ...providerFlags("chat", "http://127.0.0.1:9/v1"),
        "--api-key",
        canary,
        "-w",
        workspace,
        HELLO_GOAL,
      ],
      cliEnv(await tempDir("harness-prov-home-")),
    );
    expectExit(result, 64);
    expect(`${result.stdout}${result.stderr}`).not.toContain(canary);
  });

  it("a canary key sent to the server is absent from the journal, artifacts and output", async () => {
    const canary = `canary${randomBytes(12).toString("hex")}`;
    const { result, workspace, server } = await runHello("anthropic", helloScript(), {
      session: "canary-ok",
      env: { ANTHROPIC_API_KEY: canary },
    });
    expectExit(result, 0);
    expect(server.requests.map((r) => r.headers["x-api-key"])).toEqual([canary, canary, canary]);
    const harnessDir = join(workspace, ".harness");
    expect(await filesContaining(harnessDir, canary)).toEqual([]);
    expect(`${result.stdout}${result.stderr}`).not.toContain(canary);
  });
});
