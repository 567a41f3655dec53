import { readFile } from "node:fs/promises";
import { join } from "node:path";
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
import {
  HELLO_AFTER,
  HELLO_ANSWER,
  HELLO_BEFORE,
  HELLO_FILE,
  HELLO_GOAL,
  HELLO_USAGE,
  helloRunArgs,
  helloScript,
} from "./hello-task.js";
import { type MockRequest, pairingProblem, startMockServer } from "./mock-server.js";
import { PROVIDERS, providerFlags } from "./providers.js";
import type { WireTool } from "./wire.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTemps());

function tool(request: MockRequest, name: string): WireTool {
  const found = request.tools.find((t) => t.name === name);
  if (found === undefined) throw new Error(`request ${request.index} does not offer ${name}`);
  return found;
}

describe.each(PROVIDERS)("the hello.txt task through $provider", ({ provider, dialect }) => {
  it("reads, edits with the read version, answers, and is verified by the host", async () => {
    const server = await startMockServer({ dialect, script: helloScript() });
    try {
      const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
      const session = `hello-${provider}`;
      const result = await runCli(
        helloRunArgs(providerFlags(dialect, server.baseUrl), workspace, session),
        cliEnv(await tempDir("harness-prov-home-")),
      );
      expectExit(result, 0);
      expect(server.failures).toEqual([]);
      expect(jsonSummary(result)).toMatchObject({
        status: "verified",
        answer: HELLO_ANSWER,
        model_requests: 3,
      });
      expect(await readFile(join(workspace, HELLO_FILE))).toEqual(Buffer.from(HELLO_AFTER));

      const [first, second, third] = server.requests;
      expect(server.requests).toHaveLength(3);
      // A loopback endpoint needs no key, and none is invented.
      for (const request of server.requests) {
        expect(request.headers.authorization).toBeUndefined();
        expect(request.headers["x-api-key"]).toBeUndefined();
      }
      // The system prompt states the workspace rules; the goal is the user turn.
      expect(first!.turns[0]).toMatchObject({ role: "system" });
      expect((first!.turns[0] as { text: string }).text).toContain("Rules of this workspace");
      expect(first!.turns).toContainEqual({ role: "user", text: HELLO_GOAL });

      // 2nd request: the read call, then exactly its result.
      const readCall = second!.turns.find((t) => t.role === "assistant");
      expect(readCall).toMatchObject({ calls: [{ name: "read_file", arguments: '{"path":"hello.txt"}' }] });
      const readId = (readCall as { calls: { id: string }[] }).calls[0]!.id;
      const secondTools = second!.turns.filter((t) => t.role === "tool");
      expect(secondTools).toHaveLength(1);
      expect(secondTools[0]).toMatchObject({ callId: readId, isError: false });
      expect((secondTools[0] as { content: string }).content).toMatch(
        /^path: hello\.txt\nversion: [0-9a-f]{64}\n/,
      );
      expect(pairingProblem(second!)).toBeUndefined();

      // 3rd request: both calls, each followed by its own result, in order.
      const thirdCalls = third!.turns.flatMap((t) => (t.role === "assistant" ? t.calls : []));
      expect(thirdCalls.map((c) => c.name)).toEqual(["read_file", "edit_file"]);
      const thirdResults = third!.turns.filter((t) => t.role === "tool");
      expect(thirdResults.map((t) => (t as { callId: string }).callId)).toEqual(thirdCalls.map((c) => c.id));
      expect(third!.turns.map((t) => t.role)).toEqual([
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
      ]);
      expect(pairingProblem(third!)).toBeUndefined();
      expect(JSON.parse(thirdCalls[1]!.arguments)).toMatchObject({
        path: "hello.txt",
        old_text: "helo, harness",
        new_text: "hello, harness",
        expected_version: expect.stringMatching(/^[0-9a-f]{64}$/),
      });

      // Tools are the frozen snapshot, as JSON Schema, identical on every request.
      const edit = tool(first!, "edit_file").schema as Record<string, unknown>;
      expect(edit).toMatchObject({
        type: "object",
        properties: {
          path: { type: "string" },
          old_text: { type: "string" },
          new_text: { type: "string" },
          expected_version: { type: "string" },
        },
        required: ["path", "old_text", "new_text"],
        additionalProperties: false,
      });
      expect(tool(first!, "read_file").schema).toMatchObject({
        type: "object",
        properties: { path: { type: "string" } },
        required: ["path"],
      });
      expect(second!.tools).toEqual(first!.tools);
      expect(third!.tools).toEqual(first!.tools);

      // The journal holds the executed calls and the usage of every reply.
      const records = await readJournal(workspace, session);
      expect(ofType(records, "tool.started").map((r) => r.data.name)).toEqual(["read_file", "edit_file"]);
      expect(ofType(records, "tool.result").map((r) => r.data.status)).toEqual(["ok", "ok"]);
      if (dialect !== "http-json") {
        expect(ofType(records, "model.reply").map((r) => r.data.usage)).toEqual(
          HELLO_USAGE.map((u) => expect.objectContaining({ output_tokens: u.output })),
        );
      }
    } finally {
      await server.close();
    }
  });
});
