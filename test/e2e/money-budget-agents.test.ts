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
  resultsByCall,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A child's `budget.cost_usd` only narrows the parent's money budget, and is enforced inside the
 * child before each request: the child's request that would cross it is never sent (the loopback
 * provider, shared by parent and child, never receives it).
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A loopback Chat Completions server answering `replies` in the order requests arrive. */
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

describe("a child's budget.cost_usd", () => {
  it("gets at most what the parent has left, and the child's request that would cross it is not sent", async () => {
    const server = await loopback([
      // The parent ($0.002): delegates, asking far more money than it has.
      {
        kind: "calls",
        calls: [
          { id: "a1", name: "agent", args: { task: "read a", label: "worker", budget: { cost_usd: 5 } } },
        ],
        usage: { input: 1_000, output: 100 },
      },
      // The child's first request: a call, and an expensive reply ($0.004 in + $0.55 out).
      {
        kind: "calls",
        calls: [{ id: "c1", name: "read_file", args: { path: "a.txt" } }],
        usage: { input: 4_000, output: 55_000 },
      },
      // Would be the child's second request: never asked for.
      { kind: "text", text: "child went on", usage: { input: 10, output: 10 } },
    ]);
    try {
      const config = join(await tempDir(), "config.json");
      await writeFile(
        config,
        JSON.stringify({
          models: {
            local: {
              provider: "openai-compatible",
              model: "m",
              base_url: server.baseUrl,
              context_window: 32_768,
              prices: { input_per_mtok: 1, output_per_mtok: 10 },
            },
          },
          default_profile: "local",
        }),
      );
      const env = {
        ...childEnv(),
        HARNESS_CONFIG: config,
        HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-"),
      };
      const workspace = await workspaceWith({ "a.txt": "a\n" });
      const run = await finished(
        spawn(
          process.execPath,
          [
            BIN,
            "run",
            "--workspace",
            workspace,
            "--session",
            "p",
            "--max-cost-usd",
            "0.6",
            "--json",
            "delegate",
          ],
          { env, stdio: ["ignore", "pipe", "pipe"] },
        ),
      );
      // The parent, $0.556 spent with its child's, cannot afford its own next request either.
      expectExit(run, 2);
      // Parent 1, child 1: the child's second request (projected ~$0.09 > $0.04 left) was not sent.
      expect(server.received()).toBe(2);
      const parent = await readJournal(workspace, "p");
      const [started] = ofType(parent, "agent.started");
      // Asked $5, got what the parent had left after its first request: $0.6 - $0.002.
      expect((started?.data.budget as { cost_usd?: number } | undefined)?.cost_usd).toBeCloseTo(0.598, 10);
      expect((started?.data.grant as { not_granted?: string[] } | undefined)?.not_granted).toEqual([
        expect.stringContaining("budget cost_usd 5"),
      ]);

      const child = await readJournal(workspace, "p/worker");
      expect(ofType(child, "model.started")).toHaveLength(1);
      expect(ofType(child, "budget.reserved")).toHaveLength(1);
      const [settled] = ofType(child, "budget.settled");
      expect(settled?.data.cost_usd).toBeCloseTo(0.554, 10);
      expect(settled?.data.left_usd).toBeCloseTo(0.044, 10);
      const [childStop] = ofType(child, "run.stopped");
      expect(childStop?.data.reason).toBe("budget_exhausted");

      const [done] = ofType(parent, "agent.finished");
      expect(done?.data.outcome).toBe("budget_exhausted");
      expect(String(resultsByCall(parent).get("a1")?.content)).toContain("budget");
      // The child's spend is the parent's: its own next request is refused too, unsent.
      expect(ofType(parent, "model.started")).toHaveLength(1);
      const [parentStop] = ofType(parent, "run.stopped");
      expect(parentStop?.data.reason).toBe("budget_exhausted");
    } finally {
      await server.close();
    }
  }, 180_000);
});
