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
  HARNESS_TOOLS,
  HELLO_BEFORE,
  HELLO_FILE,
  helloRunArgs,
  helloScript,
  readVersion,
} from "./hello-task.js";
import { startMockServer } from "./mock-server.js";
import { providerFlags } from "./providers.js";
import type { Dialect } from "./wire.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTemps());

const CASES: { dialect: Dialect; vendorReason: string }[] = [
  { dialect: "chat", vendorReason: "length" },
  { dialect: "anthropic", vendorReason: "max_tokens" },
  { dialect: "responses", vendorReason: "incomplete" },
];

describe.each(CASES)(
  "a reply cut by the output limit ($vendorReason) in the middle of an edit",
  ({ dialect }) => {
    it("runs nothing, keeps the partial reply as evidence and stops with exit 2", async () => {
      let prefix = "";
      const server = await startMockServer({
        dialect,
        script: helloScript({
          inject: (request) => {
            if (request.step !== 1) return undefined;
            prefix = HARNESS_TOOLS.truncatedEditArgs(HELLO_FILE, readVersion(request));
            return {
              kind: "truncated",
              call: { id: "call_edit_cut", name: "edit_file", argumentsPrefix: prefix },
              usage: { input: 900, output: 4096 },
            };
          },
        }),
      });
      try {
        const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
        const session = `cut-${dialect}`;
        const result = await runCli(
          helloRunArgs(providerFlags(dialect, server.baseUrl), workspace, session),
          cliEnv(await tempDir("harness-prov-home-")),
        );
        expectExit(result, 2);
        expect(server.failures).toEqual([]);
        expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "protocol_error" });
        expect(await readFile(join(workspace, HELLO_FILE))).toEqual(Buffer.from(HELLO_BEFORE));
        expect(server.requests).toHaveLength(2);

        const records = await readJournal(workspace, session);
        // Only the read ran; the cut edit never started.
        expect(ofType(records, "tool.started").map((r) => r.data.name)).toEqual(["read_file"]);
        expect(ofType(records, "model.reply")).toHaveLength(1);
        const [protocolError] = ofType(records, "model.protocol_error");
        expect(protocolError?.data).toMatchObject({
          step: 1,
          error: expect.stringContaining('reason "length"'),
          evidence: {
            stop_reason: "length",
            calls: [{ name: "edit_file", arguments: prefix }],
          },
        });
        expect(ofType(records, "run.stopped").at(-1)?.data).toMatchObject({ reason: "protocol_error" });
      } finally {
        await server.close();
      }
    });
  },
);
