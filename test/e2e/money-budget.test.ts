import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockReply, writeReply } from "../e2e-providers/wire.js";
import {
  BIN,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * `--max-cost-usd`: a request whose projected cost exceeds what is left is never sent (the
 * loopback provider never receives it), the spend is journaled (budget.reserved / settled), and a
 * money budget without prices is refused at start.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A loopback Chat Completions server answering `replies` in order; counts what it received. */
async function loopback(replies: Exclude<MockReply, { kind: "stall" }>[]) {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const reply = replies[Math.min(received, replies.length - 1)]!;
      received += 1;
      const wire = writeReply("chat", reply);
      res.writeHead(wire.status, wire.headers);
      res.end("body" in wire ? wire.body : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received: () => received,
    close: () => new Promise((r) => server.close(r)),
  };
}

async function envWith(profile: Record<string, unknown>): Promise<NodeJS.ProcessEnv> {
  const path = join(await tempDir(), "config.json");
  await writeFile(path, JSON.stringify({ models: { local: profile }, default_profile: "local" }));
  return { ...childEnv(), HARNESS_CONFIG: path };
}

function cli(args: string[], env: NodeJS.ProcessEnv) {
  return finished(spawn(process.execPath, [BIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] }));
}

describe("--max-cost-usd", () => {
  it("stops before a request that would cross the budget: the provider never receives it", async () => {
    // The first reply asks for a call and reports an expensive usage ($0.004 in + $0.50 out).
    const server = await loopback([
      {
        kind: "calls",
        calls: [{ id: "c1", name: "read_file", args: { path: "a.txt" } }],
        usage: { input: 4_000, output: 50_000 },
      },
      { kind: "text", text: "done", usage: { input: 4_000, output: 10 } },
    ]);
    try {
      const env = await envWith({
        provider: "openai-compatible",
        model: "m",
        base_url: server.baseUrl,
        context_window: 32_768,
        prices: { input_per_mtok: 1, output_per_mtok: 10 },
      });
      const workspace = await workspaceWith({ "a.txt": "a\n" });
      const run = await cli(
        [
          "run",
          "--workspace",
          workspace,
          "--session",
          "capped",
          "--max-cost-usd",
          "0.55",
          "--json",
          "read a",
        ],
        env,
      );
      expectExit(run, 2);
      // The first request (projected ~$0.09 with the whole reply reserve as output) fit; after it
      // settled at $0.504 the second (again ~$0.09) did not fit the $0.046 left and was not sent.
      expect(server.received()).toBe(1);
      const journal = await readJournal(workspace, "capped");
      expect(ofType(journal, "model.started")).toHaveLength(1);
      expect(ofType(journal, "budget.reserved")).toHaveLength(1);
      const [settled] = ofType(journal, "budget.settled");
      expect(settled?.data.cost_usd).toBeCloseTo(0.504, 10);
      expect(settled?.data.left_usd).toBeCloseTo(0.046, 10);
      const [stopped] = ofType(journal, "run.stopped");
      expect(stopped?.data.reason).toBe("budget_exhausted");
      expect(String(stopped?.data.message)).toContain("--max-cost-usd 0.55");
      // The budget is recorded with the session, so a resume continues it (and is refused here too).
      const resumed = await cli(["resume", "capped", "--workspace", workspace, "--json"], env);
      expectExit(resumed, 2);
      expect(server.received()).toBe(1);
      const inspect = await cli(["inspect", "capped", "--workspace", workspace], env);
      expect(inspect.stdout).toMatch(/budget: request 1 cost \$0\.5040, \$0\.0460 left/);
    } finally {
      await server.close();
    }
  }, 120_000);

  it("is refused at start when the profile gives no prices: nothing is recorded or sent", async () => {
    const server = await loopback([{ kind: "text", text: "hi" }]);
    try {
      const env = await envWith({ provider: "openai-compatible", model: "m", base_url: server.baseUrl });
      const workspace = await workspaceWith({});
      const run = await cli(["run", "--workspace", workspace, "--max-cost-usd", "1", "--json", "hi"], env);
      expectExit(run, 64);
      expect(run.stderr).toContain("prices");
      expect(server.received()).toBe(0);
      expect(sessionIds(workspace)).toEqual([]);
    } finally {
      await server.close();
    }
  }, 60_000);
});
