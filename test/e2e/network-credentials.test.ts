import { readdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionAuthority } from "../../src/network/session-ca.js";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * Credentials that never enter the sandbox, through the built CLI: a loopback HTTPS host with a
 * certificate from a CA of the test's own (given to harness as NODE_EXTRA_CA_CERTS) is bound to
 * NPM_TOKEN in the user config. curl inside the sandbox sends the placeholder; the host receives
 * the real token; `env` inside shows only the placeholder; and though the host echoes the value
 * back (in a header, and in a gzip body), what curl receives holds only the placeholder: no byte
 * of the workspace (the files curl wrote, the journal, artifacts) holds the value.
 *
 * The host is 127.0.0.2: NO_PROXY names localhost and 127.0.0.1 (the sandbox's own loopback).
 */

const HOST = "127.0.0.2";
const TOKEN = "npm_e2eRealTokenValue_9f8e7d6c5b4a";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

interface Registry {
  port: number;
  authorizations: string[];
  close(): Promise<void>;
}

/** An HTTPS server that records each request's authorization header and echoes it back. */
async function registry(ca: SessionAuthority): Promise<Registry> {
  const leaf = ca.leafFor(HOST);
  const authorizations: string[] = [];
  const server: Server = createServer({ key: leaf.key, cert: leaf.cert }, (request, response) => {
    const authorization = String(request.headers.authorization ?? "(none)");
    authorizations.push(authorization);
    request.resume();
    // The echo comes back in a header and in a body compressed when the request allows it:
    // neither may carry the value into the sandbox.
    const body = Buffer.from(`upstream saw: ${authorization}\n`);
    const gzip = String(request.headers["accept-encoding"] ?? "").includes("gzip");
    response.writeHead(200, {
      "x-echo": authorization,
      ...(gzip ? { "content-encoding": "gzip" } : {}),
    });
    response.end(gzip ? gzipSync(body) : body);
  });
  await new Promise<void>((done) => server.listen(0, HOST, done));
  return {
    port: (server.address() as AddressInfo).port,
    authorizations,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((done) => server.close(() => done()));
    },
  };
}

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

describe("credentials with --network policy", () => {
  it("the bound host receives the real token; the sandbox, journal and artifacts see only the placeholder", async () => {
    const testCa = SessionAuthority.create();
    const server = await registry(testCa);
    try {
      const dir = await tempDir("harness-creds-");
      const caFile = join(dir, "test-ca.pem");
      await writeFile(caFile, testCa.certificate);
      const configFile = join(dir, "config.json");
      await writeFile(
        configFile,
        JSON.stringify({
          credentials: { NPM_TOKEN: { hosts: [HOST], header: "authorization", format: "Bearer {value}" } },
        }),
      );
      const workspace = await workspaceWith({ "README.md": "x\n" });
      const command = [
        'echo "env=[$(env | grep NPM_TOKEN)]"',
        'echo "ssl=[$SSL_CERT_FILE] node=[$NODE_EXTRA_CA_CERTS] git=[$GIT_SSL_CAINFO]"',
        'echo "egress=[$(ls /run/harness-egress | tr "\\n" " ")] keys=[$(grep -c "PRIVATE KEY" /run/harness-egress/* 2>/dev/null | tr "\\n" " ")]"',
        `curl -sS --compressed --max-time 30 -D echo-headers.txt -H "authorization: Bearer $NPM_TOKEN" https://${HOST}:${server.port}/whoami | tee echo.txt`,
      ].join("; ");
      const script = await jsonScript([
        { calls: [{ id: "s1", name: "shell", arguments: { command, timeout_ms: 60_000 } }] },
        { text: "done" },
      ]);
      const child = startHarness(
        [
          "run",
          "--script",
          script,
          "--workspace",
          workspace,
          "--json",
          "--shell",
          "allow",
          "--network",
          "policy",
          "--allow",
          `net(${HOST}:${server.port})`,
          "use the registry",
        ],
        { env: { ...childEnv(), HARNESS_CONFIG: configFile, NPM_TOKEN: TOKEN, NODE_EXTRA_CA_CERTS: caFile } },
      );
      const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
      const result = await finished(child).finally(() => clearTimeout(timer));
      expectExit(result, 0);
      const session = String(jsonSummary(result).session);
      const records = await readJournal(workspace, session);

      // The host got the real value, once, from curl inside the sandbox.
      expect(server.authorizations).toEqual([`Bearer ${TOKEN}`]);
      const call = JSON.stringify(resultsByCall(records).get("s1"));
      // Inside, NPM_TOKEN is the placeholder; the CA variables name the bundle; no key is there.
      expect(call).toMatch(/env=\[NPM_TOKEN=harness-placeholder-NPM_TOKEN-[0-9a-f]{32}\]/);
      expect(call).toContain("ssl=[/run/harness-egress/ca-bundle.pem]");
      expect(call).toContain("node=[/run/harness-egress/ca-bundle.pem]");
      expect(call).toContain("git=[/run/harness-egress/ca-bundle.pem]");
      expect(call).toMatch(/egress=\[ca-bundle\.pem proxy\.sock \]/);
      expect(call).toContain("keys=[/run/harness-egress/ca-bundle.pem:0");
      // The host echoed the value back: the process received the placeholder in its place.
      expect(call).toMatch(/upstream saw: Bearer harness-placeholder-NPM_TOKEN-[0-9a-f]{32}/);
      const echoed = await readFile(join(workspace, "echo.txt"), "utf8");
      expect(echoed).toMatch(/^upstream saw: Bearer harness-placeholder-NPM_TOKEN-[0-9a-f]{32}\n$/);
      const echoHeaders = await readFile(join(workspace, "echo-headers.txt"), "utf8");
      expect(echoHeaders).toMatch(/x-echo: Bearer harness-placeholder-NPM_TOKEN-[0-9a-f]{32}/i);
      expect(echoHeaders.toLowerCase()).not.toContain("content-encoding");

      expect(ofType(records, "credential.used").map((record) => record.data)).toEqual([
        { call_id: "s1", name: "NPM_TOKEN", host: HOST },
      ]);
      expect(ofType(records, "net.connection")[0]?.data).toMatchObject({
        call_id: "s1",
        host: HOST,
        port: server.port,
        decision: "allow",
      });

      // No trace of the value anywhere: the workspace (what curl wrote, and .harness with the
      // journal, artifacts, everything of the session) and the CLI's output.
      const written = await filesUnder(workspace);
      expect(written.length).toBeGreaterThan(0);
      for (const file of written) {
        const bytes = await readFile(file);
        expect(bytes.includes(TOKEN), file).toBe(false);
      }
      expect(result.stdout).not.toContain(TOKEN);
      expect(result.stderr).not.toContain(TOKEN);
    } finally {
      await server.close();
    }
  });

  it("an unset variable leaves the credential unavailable with a notice, and the sandbox no variable", async () => {
    {
      const dir = await tempDir("harness-creds-");
      const configFile = join(dir, "config.json");
      await writeFile(
        configFile,
        JSON.stringify({ credentials: { NPM_TOKEN: { hosts: [HOST], header: "authorization" } } }),
      );
      const workspace = await workspaceWith({ "README.md": "x\n" });
      const script = await jsonScript([
        { calls: [{ id: "s1", name: "shell", arguments: { command: 'echo "token=[$NPM_TOKEN]"' } }] },
        { text: "done" },
      ]);
      const env: NodeJS.ProcessEnv = { ...childEnv(), HARNESS_CONFIG: configFile };
      delete env.NPM_TOKEN;
      const result = await finished(
        startHarness(
          [
            "run",
            "--script",
            script,
            "--workspace",
            workspace,
            "--json",
            "--shell",
            "allow",
            "--network",
            "policy",
            "go",
          ],
          { env },
        ),
      );
      expectExit(result, 0);
      expect(result.stderr).toContain(
        "credential NPM_TOKEN is unavailable: harness's environment has no NPM_TOKEN",
      );
      const records = await readJournal(workspace, String(jsonSummary(result).session));
      expect(JSON.stringify(resultsByCall(records).get("s1"))).toContain("token=[]");
    }
  });
});
