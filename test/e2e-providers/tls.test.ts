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
import { HELLO_AFTER, HELLO_BEFORE, HELLO_FILE, helloRunArgs, helloScript } from "./hello-task.js";
import { startMockServer } from "./mock-server.js";
import { PROVIDERS, providerFlags } from "./providers.js";

/**
 * Every provider over https. The server's certificate (fixtures/tls, self-signed for 127.0.0.1,
 * valid until 2126) is trusted the way a user trusts a private endpoint: NODE_EXTRA_CA_CERTS.
 */
const TLS_DIR = join(import.meta.dirname, "fixtures", "tls");
const CERT_FILE = join(TLS_DIR, "server.crt");
let tls: { key: Buffer; cert: Buffer };

beforeAll(async () => {
  ensureBuilt();
  tls = { key: await readFile(join(TLS_DIR, "server.key")), cert: await readFile(CERT_FILE) };
});
afterAll(() => removeTemps());

describe.each(PROVIDERS)("$provider over https", ({ provider, dialect }) => {
  it("runs the hello.txt task against a trusted certificate", async () => {
    const server = await startMockServer({ dialect, script: helloScript(), tls });
    try {
      expect(server.baseUrl.startsWith("https://127.0.0.1:")).toBe(true);
      const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
      const result = await runCli(
        helloRunArgs(providerFlags(dialect, server.baseUrl), workspace, `tls-${provider}`),
        cliEnv(await tempDir("harness-tls-home-"), { NODE_EXTRA_CA_CERTS: CERT_FILE }),
      );
      expectExit(result, 0);
      expect(server.failures).toEqual([]);
      expect(server.requests).toHaveLength(3);
      expect(jsonSummary(result)).toMatchObject({ status: "verified", model_requests: 3 });
      expect(await readFile(join(workspace, HELLO_FILE))).toEqual(Buffer.from(HELLO_AFTER));
    } finally {
      await server.close();
    }
  });

  it("stops at once, without retrying, when the certificate is not trusted, and says what to do", async () => {
    const server = await startMockServer({ dialect, script: helloScript(), tls });
    try {
      const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
      const session = `untrusted-${provider}`;
      const result = await runCli(
        helloRunArgs(providerFlags(dialect, server.baseUrl), workspace, session),
        cliEnv(await tempDir("harness-tls-home-")),
      );
      expectExit(result, 2);
      expect(server.requests).toEqual([]);
      expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "provider_error" });
      expect(result.stderr).toContain("NODE_EXTRA_CA_CERTS");
      const records = await readJournal(workspace, session);
      expect(ofType(records, "model.retryable_error")).toEqual([]);
      const failed = ofType(records, "model.failed");
      expect(failed).toHaveLength(1);
      expect(failed[0]?.data).toMatchObject({ code: "TRANSPORT" });
      expect(failed[0]?.data.message).toContain("DEPTH_ZERO_SELF_SIGNED_CERT");
      expect(await readFile(join(workspace, HELLO_FILE))).toEqual(Buffer.from(HELLO_BEFORE));
    } finally {
      await server.close();
    }
  });
});
