import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedChromium } from "../viewer/browser.js";
import {
  ensureBuilt,
  expectExit,
  journalFile,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { run, userConfig } from "./mcp-run-support.js";

/*
 * A command hook with `"network": true`, through the built CLI: under `--network policy` it
 * reaches a loopback listener a rule names, through a proxy of its own, and each connection is
 * journaled as `net.connection` under the call it ran for with the hook's name; no rule, no
 * `network`, or `--network off`: the listener receives nothing. A credential bound to the host is
 * substituted for the hook as for a command: the host gets the real value, the hook's sandbox and
 * the journal only the placeholder.
 *
 * 127.0.0.2, not 127.0.0.1: NO_PROXY names the sandbox's own loopback.
 */

const HOST = "127.0.0.2";
const TOKEN = "hook_e2eRealTokenValue_1a2b3c4d5e6f";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);
const browser = sharedChromium();

interface Listener {
  port: number;
  /** METHOD URL, then the authorization header and the body, per request. */
  seen: { line: string; authorization: string; body: string }[];
  close(): Promise<void>;
}

async function listener(): Promise<Listener> {
  const seen: Listener["seen"] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({
        line: `${request.method} ${request.url}`,
        authorization: String(request.headers.authorization ?? "(none)"),
        body: Buffer.concat(chunks).toString("utf8"),
      });
      response.end("noted\n");
    });
  });
  await new Promise<void>((done) => server.listen(0, HOST, done));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((done) => server.close(() => done()));
    },
  };
}

/** A notify hook after every read_file call that posts to the listener. */
function postingHook(port: number, extra: Record<string, unknown> = {}, command?: string) {
  return {
    kind: "notify",
    name: "post-status",
    tools: ["read_file"],
    // Generous: the hook's sandbox and its proxy's forwarder start on a loaded machine.
    timeout_ms: 60_000,
    command: command ?? `curl -sS --max-time 20 http://${HOST}:${port}/from-hook`,
    ...extra,
  };
}

async function session(options: {
  hook: Record<string, unknown>;
  args: string[];
  config?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
}) {
  const workspace = await workspaceWith({ "a.txt": "a\n" });
  const { env } = await userConfig({ hooks: { after_execute: [options.hook] }, ...options.config });
  const script = await jsonScript([
    { calls: [{ id: "c1", name: "read_file", arguments: { path: "a.txt" } }] },
    { text: "done" },
  ]);
  const result = await run(
    ["run", "--workspace", workspace, "--script", script, ...options.args, "--json", "read a.txt"],
    { ...env, ...options.env },
  );
  expectExit(result, 0);
  const id = String(jsonSummary(result).session);
  return {
    workspace,
    id,
    env: { ...env, ...options.env },
    result,
    records: await readJournal(workspace, id),
  };
}

const connections = (records: Awaited<ReturnType<typeof readJournal>>) =>
  ofType(records, "net.connection").map((record) => record.data);

describe("a command hook with network", () => {
  it("reaches a host a rule allows, journaled under the call it ran for with the hook's name; inspect lists it", {
    timeout: 180_000,
  }, async () => {
    const host = await listener();
    try {
      const { workspace, id, env, records } = await session({
        hook: postingHook(host.port, { network: true }),
        args: ["--network", "policy", "--allow", `net(${HOST}:${host.port})`],
      });
      expect(host.seen.map((request) => request.line)).toEqual(["GET /from-hook"]);
      expect(connections(records)).toEqual([
        expect.objectContaining({
          call_id: "c1",
          hook: "post-status",
          host: HOST,
          port: host.port,
          decision: "allow",
          rule: `net(${HOST}:${host.port})`,
        }),
      ]);
      expect(ofType(records, "hook.decided").map((record) => record.data)).toEqual([
        expect.objectContaining({ call_id: "c1", hook: "post-status", decision: "observed" }),
      ]);

      const text = await run(["inspect", id, "--workspace", workspace], env);
      expectExit(text, 0);
      expect(text.stdout).toContain(`c1: 1 connection(s), 1 allowed, 0 denied, 0 failed; up`);
      expect(text.stdout).toContain(`${HOST}:${host.port} (hook post-status)`);
      expect(text.stdout).toContain(
        `net allow ${HOST}:${host.port} for c1 (hook post-status) by net(${HOST}:${host.port})`,
      );
      const json = await run(["inspect", id, "--workspace", workspace, "--json"], env);
      expectExit(json, 0);
      expect(JSON.parse(json.stdout).connections).toEqual([
        expect.objectContaining({ call_id: "c1", hook: "post-status", decision: "allow" }),
      ]);
      // The report's page shows it under the call, naming the hook.
      const out = join(await tempDir(), "report.html");
      expectExit(await run(["report", id, "--workspace", workspace, "-o", out], env), 0);
      const page = await browser().newPage();
      try {
        await page.goto(pathToFileURL(out).href);
        const timeline = page.locator("#timeline");
        await expect
          .poll(() => timeline.textContent())
          .toContain(`net allow ${HOST}:${host.port} for c1 (hook post-status) by net(${HOST}:${host.port})`);
      } finally {
        await page.close();
      }
    } finally {
      await host.close();
    }
  });

  it("for a sub-agent's call, reaches the host through the child's network: journaled in the child's session, not the parent's", {
    timeout: 240_000,
  }, async () => {
    const host = await listener();
    try {
      const workspace = await workspaceWith({ "a.txt": "a\n" });
      const { env } = await userConfig({
        hooks: { after_execute: [postingHook(host.port, { network: true })] },
      });
      const environment = { ...env, HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") };
      const script = {
        replies: [
          { text: "", calls: [{ id: "a1", name: "agent", arguments: { task: "read a.txt", label: "kid" } }] },
          { text: "ok" },
        ],
        agents: {
          kid: {
            replies: [
              { calls: [{ id: "c1", name: "read_file", arguments: { path: "a.txt" } }] },
              { text: "read" },
            ],
          },
        },
      };
      const file = join(await tempDir(), "script.json");
      await writeFile(file, JSON.stringify(script));
      const id = `s${Math.random().toString(16).slice(2, 10)}`;
      const rule = `net(${HOST}:${host.port})`;
      const result = await run(
        ["run", "--workspace", workspace, "--script", file, "--session", id, "--network", "policy"].concat([
          "--allow",
          rule,
          "--json",
          "delegate",
        ]),
        environment,
      );
      expectExit(result, 0);
      expect(host.seen.map((request) => request.line)).toEqual(["GET /from-hook"]);
      const child = await readJournal(workspace, `${id}/kid`);
      expect(connections(child)).toEqual([
        expect.objectContaining({ call_id: "c1", hook: "post-status", decision: "allow", rule }),
      ]);
      // The parent's own call (a1) ran no read_file: no connection is recorded in its journal.
      expect(connections(await readJournal(workspace, id))).toEqual([]);
    } finally {
      await host.close();
    }
  });

  it("is refused a host no rule allows: the listener receives nothing, the deny is journaled", {
    timeout: 180_000,
  }, async () => {
    const host = await listener();
    try {
      const { records } = await session({
        hook: postingHook(host.port, { network: true }),
        args: ["--network", "policy"],
      });
      expect(host.seen).toEqual([]);
      expect(connections(records)).toEqual([
        expect.objectContaining({
          call_id: "c1",
          hook: "post-status",
          host: HOST,
          port: host.port,
          decision: "deny",
          reason: expect.stringContaining(`no rule allows ${HOST}:${host.port}`),
        }),
      ]);
    } finally {
      await host.close();
    }
  });

  it('has no network with --network off, nor without "network": true: nothing received, nothing journaled', {
    timeout: 180_000,
  }, async () => {
    const host = await listener();
    try {
      const off = await session({
        hook: postingHook(host.port, { network: true }),
        args: ["--network", "off", "--allow", `net(${HOST}:${host.port})`],
      });
      const unasked = await session({
        hook: postingHook(host.port),
        args: ["--network", "policy", "--allow", `net(${HOST}:${host.port})`],
      });
      expect(host.seen).toEqual([]);
      for (const { records } of [off, unasked]) {
        expect(connections(records)).toEqual([]);
        // curl found no route: the notify hook failed, and the call went on.
        expect(ofType(records, "hook.decided").map((record) => record.data)).toEqual([
          expect.objectContaining({ call_id: "c1", hook: "post-status", decision: "error" }),
        ]);
        expect(ofType(records, "tool.result")[0]?.data).toMatchObject({ call_id: "c1", status: "ok" });
      }
    } finally {
      await host.close();
    }
  });

  it("after untrusted content, a host not contacted before is denied for the hook (it cannot ask), though a rule allows it", {
    timeout: 180_000,
  }, async () => {
    const page = await listener();
    const host = await listener();
    try {
      const workspace = await workspaceWith({ "a.txt": "a\n" });
      const { env } = await userConfig({
        hooks: { after_execute: [postingHook(host.port, { network: true })] },
      });
      // The page first (untrusted content), then a read whose hook posts to a host never contacted.
      const script = await jsonScript([
        { calls: [{ id: "f1", name: "web_fetch", arguments: { url: `http://${HOST}:${page.port}/page` } }] },
        { calls: [{ id: "c1", name: "read_file", arguments: { path: "a.txt" } }] },
        { text: "done" },
      ]);
      const result = await run(
        [
          "run",
          "--workspace",
          workspace,
          "--script",
          script,
          "--network",
          "policy",
          "--allow",
          `net(${HOST}:${page.port})`,
          "--allow",
          `net(${HOST}:${host.port})`,
          "--json",
          "read the page",
        ],
        env,
      );
      expectExit(result, 0);
      const records = await readJournal(workspace, String(jsonSummary(result).session));
      expect(page.seen.map((request) => request.line)).toEqual(["GET /page"]);
      expect(host.seen).toEqual([]);
      expect(connections(records)).toEqual([
        expect.objectContaining({ call_id: "f1", decision: "allow", port: page.port }),
        expect.objectContaining({
          call_id: "c1",
          hook: "post-status",
          port: host.port,
          decision: "deny",
          reason: `not approved: a command hook cannot ask a person (hook post-status): untrusted content seen: web_fetch f1 (http://${HOST}:${page.port}/page); allow rule net(${HOST}:${host.port}) from cli`,
        }),
      ]);
    } finally {
      await page.close();
      await host.close();
    }
  });

  it("gets a bound credential substituted by its proxy: the host receives the value, the hook and journal only the placeholder", {
    timeout: 180_000,
  }, async () => {
    const host = await listener();
    try {
      // The hook sends the placeholder as its header and its whole environment as the body.
      const command = `env | curl -sS --max-time 20 -H "authorization: $HOOK_TOKEN" --data-binary @- http://${HOST}:${host.port}/post`;
      const { workspace, id, result, records } = await session({
        hook: postingHook(host.port, { network: true }, command),
        args: ["--network", "policy", "--allow", `net(${HOST}:${host.port})`],
        config: {
          credentials: { HOOK_TOKEN: { hosts: [HOST], header: "authorization", format: "Bearer {value}" } },
        },
        env: { HOOK_TOKEN: TOKEN },
      });
      expect(host.seen.map((request) => [request.line, request.authorization])).toEqual([
        ["POST /post", `Bearer ${TOKEN}`],
      ]);
      const body = host.seen[0]!.body;
      expect(body).toMatch(/^HOOK_TOKEN=harness-placeholder-HOOK_TOKEN-[0-9a-f]{32}$/m);
      expect(body).not.toContain(TOKEN);
      expect(ofType(records, "credential.used").map((record) => record.data)).toEqual([
        { call_id: "c1", hook: "post-status", name: "HOOK_TOKEN", host: HOST },
      ]);
      expect(connections(records)).toEqual([
        expect.objectContaining({ call_id: "c1", hook: "post-status", decision: "allow" }),
      ]);
      expect(await readFile(journalFile(workspace, id), "utf8")).not.toContain(TOKEN);
      expect(result.stdout).not.toContain(TOKEN);
      expect(result.stderr).not.toContain(TOKEN);
    } finally {
      await host.close();
    }
  });
});
