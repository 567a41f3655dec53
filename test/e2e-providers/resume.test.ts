import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  cliEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonSummary,
  ofType,
  readJournal,
  removeTemps,
  runCli,
  startCli,
  tempDir,
  workspaceWith,
} from "./cli.js";
import { HELLO_AFTER, HELLO_BEFORE, HELLO_FILE, helloRunArgs, helloScript } from "./hello-task.js";
import { pairingProblem, startMockServer } from "./mock-server.js";
import { providerFlags } from "./providers.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTemps());

describe("a run killed while it waits for the model", () => {
  it("resumes with one new request whose history pairs every call with its result", async () => {
    const normal = helloScript();
    // The 2nd request (step 1, first attempt) is accepted and never answered.
    const server = await startMockServer({
      dialect: "chat",
      script: (request) => (request.index === 1 ? { kind: "stall" } : normal(request)),
    });
    try {
      const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
      const session = "killed-mid-request";
      const env = cliEnv(await tempDir("harness-prov-home-"));
      const child = startCli(
        helloRunArgs(providerFlags("chat", server.baseUrl), workspace, session, { json: false }),
        env,
      );
      const exited = finished(child);
      await server.waitForRequests(2);
      child.kill("SIGKILL");
      expect((await exited).signal).toBe("SIGKILL");

      const before = await readJournal(workspace, session);
      expect(ofType(before, "model.started").map((r) => r.data.step)).toEqual([0, 1]);
      expect(ofType(before, "tool.result").map((r) => r.data.name)).toEqual(["read_file"]);
      expect(ofType(before, "model.reply")).toHaveLength(1);

      if (existsSync(join(workspace, ".harness", "sessions", session, "writer.lock"))) {
        expectExit(await runCli(["unlock", session, "-w", workspace], env), 0);
      }
      const resumed = await runCli(["resume", session, "-w", workspace, "--json"], env);
      expectExit(resumed, 0);
      expect(server.failures).toEqual([]);
      expect(jsonSummary(resumed)).toMatchObject({ status: "verified" });
      expect(await readFile(join(workspace, HELLO_FILE))).toEqual(Buffer.from(HELLO_AFTER));

      // After the kill: exactly one request for the interrupted step, then the final step.
      const after = server.requests.slice(2);
      expect(after.map((r) => r.step)).toEqual([1, 2]);
      const retried = after[0]!;
      expect(pairingProblem(retried)).toBeUndefined();
      expect(retried.turns.map((t) => t.role)).toEqual(["system", "user", "assistant", "tool"]);
      const [call] = (retried.turns[2] as { calls: { id: string; name: string }[] }).calls;
      expect(call).toMatchObject({ id: "call_read_1", name: "read_file" });
      expect(retried.turns[3]).toMatchObject({ role: "tool", callId: "call_read_1", isError: false });

      const records = await readJournal(workspace, session);
      expect(ofType(records, "session.resumed")).toHaveLength(1);
      expect(ofType(records, "model.started").map((r) => r.data.step)).toEqual([0, 1, 1, 2]);
      expect(ofType(records, "tool.started").map((r) => r.data.name)).toEqual(["read_file", "edit_file"]);
    } finally {
      await server.close();
    }
  });
});
