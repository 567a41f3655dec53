import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeReply } from "../e2e-providers/wire.js";
import {
  BIN,
  childEnv,
  ensureBuilt,
  finished,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A loopback server with GET /v1/models and a Chat Completions endpoint that answers "hello". */
async function loopback() {
  const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    req.resume();
    req.on("end", () => {
      if (req.method === "GET" && req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "zeta-7b" }, { id: "alpha-1b" }] }));
        return;
      }
      const wire = writeReply("chat", { kind: "text", text: "hello", usage: { input: 120, output: 7 } });
      res.writeHead(wire.status, wire.headers);
      res.end("body" in wire ? wire.body : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, seen, close: () => new Promise((r) => server.close(r)) };
}

async function withConfig(config: unknown): Promise<NodeJS.ProcessEnv> {
  const path = join(await tempDir(), "config.json");
  await writeFile(path, JSON.stringify(config));
  return { ...childEnv(), HARNESS_CONFIG: path, LOCAL_KEY: "k-123" };
}

function cli(args: string[], env: NodeJS.ProcessEnv, cwd?: string) {
  return finished(spawn(process.execPath, [BIN, ...args], { env, cwd, stdio: ["ignore", "pipe", "pipe"] }));
}

describe("harness models and the default profile", () => {
  it("lists the configured profiles and the models the provider offers (GET /models, with the key)", async () => {
    const server = await loopback();
    try {
      const env = await withConfig({
        models: {
          local: {
            provider: "openai-compatible",
            model: "alpha-1b",
            base_url: server.baseUrl,
            api_key_env: "LOCAL_KEY",
          },
          other: { provider: "anthropic", model: "claude-x" },
        },
        default_profile: "local",
      });
      const text = await cli(["models"], env);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain(`* local  openai-compatible  alpha-1b  ${server.baseUrl}\n`);
      expect(text.stdout).toContain("  other  anthropic  claude-x\n");
      expect(text.stdout).toContain("models offered to profile local:\n  alpha-1b\n  zeta-7b\n");
      expect(server.seen[0]).toMatchObject({ method: "GET", url: "/v1/models" });
      expect(server.seen[0]!.headers.authorization).toBe("Bearer k-123");
      const json = await cli(["models", "--profile", "local", "--json"], env);
      expect(JSON.parse(json.stdout).listed).toEqual({ profile: "local", models: ["alpha-1b", "zeta-7b"] });
      const missing = await cli(["models", "--profile", "nope"], env);
      expect(missing.code).toBe(64);
      expect(missing.stderr).toContain('no model profile "nope" in your config (profiles: local, other)');
    } finally {
      await server.close();
    }
  });

  it("a server that is not running is named, with the question", async () => {
    const server = await loopback();
    await server.close();
    const env = await withConfig({
      models: { local: { provider: "openai-compatible", model: "m", base_url: server.baseUrl } },
    });
    const result = await cli(["models", "--profile", "local"], env);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain(`cannot connect to ${server.baseUrl}/models: is the server running?`);
  });

  it("with default_profile, run needs no --provider/--model; the profile is recorded for resume", async () => {
    const server = await loopback();
    try {
      const env = await withConfig({
        models: {
          local: {
            provider: "openai-compatible",
            model: "alpha-1b",
            base_url: server.baseUrl,
            context_window: 100000,
          },
        },
        default_profile: "local",
      });
      const workspace = await workspaceWith({});
      const result = await cli(["run", "--workspace", workspace, "--json", "say hello"], env);
      expect(result.code, result.stderr).toBe(0);
      const summary = jsonSummary(result);
      expect(summary.answer).toBe("hello");
      const started = ofType(await readJournal(workspace, String(summary.session)), "session.started")[0]!;
      expect(started.data.provider).toMatchObject({ kind: "openai-compatible", model: "alpha-1b" });
      expect(JSON.stringify(started.data)).toContain('"profile":"local"');
      const none = await cli(["run", "--workspace", workspace, "say hello"], await withConfig({}));
      expect(none.code).toBe(64);
      expect(none.stderr).toContain("or set a default once with: harness init");
    } finally {
      await server.close();
    }
  });

  it("harness init (non-interactive) writes a default profile, keeps other keys, names the key variable", async () => {
    const server = await loopback();
    try {
      const env = await withConfig({ timeouts: { shell: 1000 } });
      const init = await cli(
        [
          "init",
          "--provider",
          "openai-compatible",
          "--model",
          "alpha-1b",
          "--base-url",
          server.baseUrl,
          "--api-key-env",
          "LOCAL_KEY",
        ],
        env,
      );
      expect(init.code, init.stderr).toBe(0);
      expect(init.stdout).toContain("export LOCAL_KEY=...");
      const written = JSON.parse(await readFile(env.HARNESS_CONFIG!, "utf8"));
      expect(written).toEqual({
        timeouts: { shell: 1000 },
        models: {
          default: {
            provider: "openai-compatible",
            model: "alpha-1b",
            base_url: server.baseUrl,
            api_key_env: "LOCAL_KEY",
          },
        },
        default_profile: "default",
      });
      const models = await cli(["models", "--json"], env);
      expect(JSON.parse(models.stdout).listed.models).toEqual(["alpha-1b", "zeta-7b"]);
      const noFlags = await cli(["init"], env);
      expect(noFlags.code).toBe(64);
      expect(noFlags.stderr).toContain("without a terminal, give the profile as flags");
    } finally {
      await server.close();
    }
  });

  it("the summary, --json and inspect count the same requests, calls, events and tokens", async () => {
    const server = await loopback();
    try {
      const env = await withConfig({
        models: {
          local: {
            provider: "openai-compatible",
            model: "m",
            base_url: server.baseUrl,
            context_window: 100000,
          },
        },
        default_profile: "local",
      });
      const workspace = await workspaceWith({});
      const human = await cli(["run", "--workspace", workspace, "--session", "counted", "say hello"], env);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(/^activity +1 model requests, 0 tool calls, \d+ events$/m);
      expect(human.stdout).toMatch(/^tokens +120 in, 7 out$/m);
      expect(human.stdout).toMatch(/^duration +\d+\.\d s$/m);
      // A second run of the same session (a finished one is re-checked): the counts are the session's.
      const json = jsonSummary(
        await cli(["run", "--workspace", workspace, "--session", "counted", "--json"], env),
      );
      const inspected = JSON.parse(
        (await cli(["inspect", "counted", "--workspace", workspace, "--json"], env)).stdout,
      );
      expect(json.usage).toEqual(inspected.usage);
      expect(json.usage).toMatchObject({ input_tokens: 120, output_tokens: 7 });
      expect(json.model_requests).toBe(1);
      expect(inspected.timeline.filter((e: { type: string }) => e.type === "model.reply")).toHaveLength(1);
      // The second run recorded its own events (the re-check); both count the journal as it is now.
      expect(inspected.timeline).toHaveLength(Number(json.events));
      expect(typeof json.duration_ms).toBe("number");
    } finally {
      await server.close();
    }
  });
});
