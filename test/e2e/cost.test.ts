import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:http";
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
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A loopback Chat Completions server whose every reply reports this usage. */
async function loopback() {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const wire = writeReply("chat", {
        kind: "text",
        text: "hello",
        usage: { input: 120_000, cached: 20_000, output: 7_000 },
      });
      res.writeHead(wire.status, wire.headers);
      res.end("body" in wire ? wire.body : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

async function envWith(profile: Record<string, unknown>): Promise<NodeJS.ProcessEnv> {
  const path = join(await tempDir(), "config.json");
  await writeFile(path, JSON.stringify({ models: { local: profile }, default_profile: "local" }));
  return { ...childEnv(), HARNESS_CONFIG: path };
}

function cli(args: string[], env: NodeJS.ProcessEnv) {
  return finished(spawn(process.execPath, [BIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] }));
}

describe("the cost of a run, from the profile's prices", () => {
  it("the summary and --json show the same cost computed from the journal's usage", async () => {
    const server = await loopback();
    try {
      const env = await envWith({
        provider: "openai-compatible",
        model: "m",
        base_url: server.baseUrl,
        context_window: 1_000_000,
        prices: { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 },
      });
      const workspace = await workspaceWith({});
      const human = await cli(["run", "--workspace", workspace, "--session", "priced", "say hello"], env);
      expect(human.code, human.stderr).toBe(0);
      // 100K fresh input at $3 + 20K cached at $0.30 + 7K output at $15, per million tokens.
      expect(human.stdout).toMatch(/^cost +\$0\.4110$/m);
      const json = jsonSummary(
        await cli(["run", "--workspace", workspace, "--session", "priced", "--json"], env),
      );
      expect(json.cost_usd).toBeCloseTo(0.411, 10);
      expect(`$${Number(json.cost_usd).toFixed(4)}`).toBe("$0.4110");
    } finally {
      await server.close();
    }
  });

  it("the chat footer shows the same figure after the turn", async () => {
    const server = await loopback();
    try {
      const env = await envWith({
        provider: "openai-compatible",
        model: "m",
        base_url: server.baseUrl,
        context_window: 1_000_000,
        prices: { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 },
      });
      const workspace = await workspaceWith({});
      const child = spawn(process.execPath, [BIN, "chat"], {
        cwd: workspace,
        env,
        stdio: ["pipe", "pipe", "pipe"],
      });
      child.stdin.end("say hello\n");
      const result = await finished(child);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^m · 120\.0k in \/ 7000 out · .* · \$0\.4110 · /m);
    } finally {
      await server.close();
    }
  });

  it("without prices no cost appears anywhere", async () => {
    const server = await loopback();
    try {
      const env = await envWith({
        provider: "openai-compatible",
        model: "m",
        base_url: server.baseUrl,
        context_window: 1_000_000,
      });
      const workspace = await workspaceWith({});
      const human = await cli(["run", "--workspace", workspace, "--session", "free", "say hello"], env);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(/^tokens +120000 in/m);
      expect(human.stdout).not.toMatch(/cost|\$/);
      const json = jsonSummary(
        await cli(["run", "--workspace", workspace, "--session", "free", "--json"], env),
      );
      expect(json).not.toHaveProperty("cost_usd");
      const child = spawn(process.execPath, [BIN, "chat"], {
        cwd: workspace,
        env,
        stdio: ["pipe", "pipe", "pipe"],
      });
      child.stdin.end("say hello\n");
      const chat = await finished(child);
      expect(chat.code, chat.stderr).toBe(0);
      expect(chat.stdout).toContain("120.0k in / 7000 out");
      expect(chat.stdout).not.toContain("$");
    } finally {
      await server.close();
    }
  });

  it("a price that is not a number of dollars is a usage error naming the field", async () => {
    const env = await envWith({
      provider: "openai-compatible",
      model: "m",
      base_url: "http://127.0.0.1:9/v1",
      prices: { input_per_mtok: 3, output_per_mtok: "15" },
    });
    const workspace = await workspaceWith({});
    const result = await cli(["run", "--workspace", workspace, "say hello"], env);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("output_per_mtok");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
