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
import { HELLO_BEFORE, HELLO_FILE, HELLO_USAGE, helloRunArgs, helloScript } from "./hello-task.js";
import { startMockServer } from "./mock-server.js";
import { providerFlags } from "./providers.js";
import type { Dialect, MockUsage } from "./wire.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTemps());

function totals(usage: readonly MockUsage[]) {
  return {
    input_tokens: usage.reduce((sum, u) => sum + u.input, 0),
    output_tokens: usage.reduce((sum, u) => sum + u.output, 0),
    reasoning_tokens: usage.reduce((sum, u) => sum + (u.reasoning ?? 0), 0),
    cached_tokens: usage.reduce((sum, u) => sum + (u.cached ?? 0), 0),
  };
}

// Chat Completions and Responses report input tokens with the cached ones included, which is
// what harness records; the reported numbers can be summed as they are.
describe.each<Dialect>(["chat", "responses"])("token usage over %s", (dialect) => {
  it("is recorded per reply and totalled in the --json summary and in inspect --json", async () => {
    // A retry in the middle: a failed attempt reports nothing and must add nothing.
    const server = await startMockServer({
      dialect,
      script: helloScript({
        inject: (request) =>
          request.step === 2 && request.attempt === 0
            ? {
                kind: "http_error",
                status: 503,
                body: '{"error":{"message":"overloaded","type":"server_error"}}',
              }
            : undefined,
      }),
    });
    try {
      const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
      const session = `usage-${dialect}`;
      const env = cliEnv(await tempDir("harness-prov-home-"));
      const result = await runCli(
        helloRunArgs(providerFlags(dialect, server.baseUrl), workspace, session),
        env,
      );
      expectExit(result, 0);
      expect(server.failures).toEqual([]);
      const expected = totals(HELLO_USAGE);
      expect(jsonSummary(result)).toMatchObject({ status: "verified", model_requests: 4, usage: expected });

      const records = await readJournal(workspace, session);
      expect(ofType(records, "model.reply").map((r) => r.data.usage)).toEqual(
        HELLO_USAGE.map((u) => ({
          input_tokens: u.input,
          output_tokens: u.output,
          reasoning_tokens: u.reasoning ?? 0,
          cached_tokens: u.cached ?? 0,
        })),
      );

      const inspected = await runCli(["inspect", session, "-w", workspace, "--json"], env);
      expectExit(inspected, 0);
      expect(JSON.parse(inspected.stdout)).toMatchObject({ session, usage: expected });
      const text = await runCli(["inspect", session, "-w", workspace], env);
      expectExit(text, 0);
      expect(text.stdout).toContain(`tokens in ${expected.input_tokens} / out ${expected.output_tokens}`);
    } finally {
      await server.close();
    }
  });
});
