import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { FileJournalStore } from "../src/journal/file-store.js";
import { JournalKey } from "../src/journal/key.js";
import { parseMcpServer } from "../src/mcp/config.js";
import { McpConnection } from "../src/mcp/connection.js";
import { buildMcpTools } from "../src/mcp/tool.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { ToolRuntime } from "../src/runtime/pipeline.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { Executor } from "../src/sandbox/executor.js";
import { MemoryWorkspaceFs } from "../src/workspace/memory-fs.js";
import { rawAppender } from "./session.js";
import { type BenchRow, median, round } from "./stats.js";

/*
 * Issue 13: what harness adds to one MCP tool call. The same reference server
 * (@modelcontextprotocol/server-everything, stdio) is called with `echo` directly through the SDK
 * client and as the model's call through harness, the two taking turns call by call: argument
 * validation against the server's schema, the policy decision, the runtime pipeline, result
 * normalization and the journal (tool.started made durable before the call; tool.result staged for
 * the next durable append, as a session does).
 * Goal: harness <= 1.2 x direct + 1 ms.
 */

const require = createRequire(import.meta.url);
const EVERYTHING = join(
  dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist/index.js",
);
const WARMUP = 50;
const CALLS = 300;

/** One way of calling the server's `echo`: `call(i)` makes call number i. */
interface Caller {
  call(i: number): Promise<void>;
  close(): Promise<void>;
}

async function openDirect(): Promise<Caller> {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, "stdio"] }));
  return {
    call: async (i) => void (await client.callTool({ name: "echo", arguments: { message: `m${i}` } })),
    close: () => client.close(),
  };
}

async function openHarness(root: string, journal: boolean): Promise<Caller> {
  // Unsandboxed, like the direct client: the sandbox costs at start-up, not per call.
  const definition = parseMcpServer(
    "everything",
    { command: process.execPath, args: [EVERYTHING, "stdio"], sandbox: "off" },
    "bench",
  );
  const connection = new McpConnection({
    name: "everything",
    definition,
    stdio: { executor: new Executor(), workspace: root },
  });
  await connection.start();
  try {
    const { entries } = buildMcpTools([
      {
        server: "everything",
        trusted: false,
        toolTimeoutMs: definition.tool_timeout_ms,
        caller: connection,
        tools: await connection.listTools(),
      },
    ]);
    const registry = new ToolRegistry();
    for (const entry of entries) registry.register(entry.tool);
    const runtime = new ToolRuntime({
      sessionId: "bench-mcp",
      snapshot: registry.snapshot(),
      fs: new MemoryWorkspaceFs({}),
      artifacts: new MemoryArtifactStore(),
      permissions: modePolicy({ allow: ["mcp__everything__*"] }),
      approver: { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) },
      grants: { covers: () => false, add: () => {} },
      observedVersion: () => undefined,
      previewLimitBytes: 40_000,
      poolSize: 8,
      retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      settleGraceMs: 1000,
    });
    const backend = new FileJournalStore(join(root, ".harness"), { key: JournalKey.ephemeral() });
    const writer = await backend.openWriter(journal ? "bench-mcp" : "bench-mcp-unjournaled", {
      create: true,
    });
    const recorder = !journal
      ? { record: async () => {} }
      : {
          record: async (events: Parameters<typeof writer.append>[0]) => void (await writer.append(events)),
          // As in a session: a result may wait for the next durable append (the next call's intent,
          // or the next model.started), so a call pays one fsync, for its intent.
          defer: async (events: Parameters<typeof writer.append>[0]) =>
            void (await writer.append(events, { durable: false })),
        };
    return {
      call: async (i) => {
        const outcome = await runtime.runCalls({
          calls: [{ id: `c${i}`, name: "mcp__everything__echo", arguments: { message: `m${i}` } }],
          remainingToolCalls: 1,
          signal: new AbortController().signal,
          recorder,
          firstBatchId: i,
        });
        if (outcome.committed.length !== 1) throw new Error("the call did not commit");
      },
      close: async () => {
        await writer.close();
        await connection.close();
      },
    };
  } catch (error) {
    await connection.close();
    throw error;
  }
}

/**
 * The three callers take turns call by call (in a rotating order), so a noisy moment on this
 * shared machine hits each of them alike instead of one whole series.
 */
async function interleaved(callers: readonly Caller[]): Promise<number[][]> {
  const times = callers.map(() => [] as number[]);
  for (let i = 0; i < WARMUP + CALLS; i++) {
    for (let k = 0; k < callers.length; k++) {
      const index = (i + k) % callers.length;
      const began = performance.now();
      await callers[index]!.call(i);
      if (i >= WARMUP) times[index]!.push(performance.now() - began);
    }
  }
  return times;
}

export async function benchMcp(): Promise<BenchRow[]> {
  const root = mkdtempSync(join(tmpdir(), "harness-bench-mcp-"));
  const callers: Caller[] = [];
  try {
    // The disk's floor for one durable append, timed in the same rotation as the calls.
    const raw = rawAppender(join(root, "floor.jsonl"));
    callers.push(await openDirect(), await openHarness(root, true), await openHarness(root, false), {
      call: async () => void raw.append(),
      close: async () => raw.close(),
    });
    const [directTimes, governedTimes, unjournaledTimes, floorTimes] = await interleaved(callers);
    const floor = median(floorTimes!);
    const plain = median(directTimes!);
    const governed = median(governedTimes!);
    const unjournaled = median(unjournaledTimes!);
    const budget = 1.2 * plain + 1;
    return [
      { name: "mcp echo, SDK client directly (median)", value: round(plain, 3), unit: "ms" },
      {
        name: "mcp echo through harness (median)",
        value: round(governed, 3),
        unit: "ms",
        note: "validate, policy, pipeline, journal with fsync",
      },
      {
        name: "mcp echo through harness, journal not written",
        value: round(unjournaled, 3),
        unit: "ms",
        note: `the difference is the journal: the intent's fsync, the result staged; against the goal: ${unjournaled <= budget ? "met" : "NOT met"}`,
      },
      { name: "mcp harness / direct", value: round(governed / plain, 2), unit: "x" },
      {
        name: "raw fsync'd append, same run (floor)",
        value: round(floor, 3),
        unit: "ms",
        note: `what the call's one durable intent costs at least; harness - direct - floor = ${round(governed - plain - floor, 3)} ms`,
      },
      {
        name: "mcp overhead per call",
        value: round(governed - plain, 3),
        unit: "ms",
        note: `goal: harness <= 1.2 x direct + 1 ms = ${round(budget, 3)} ms: ${governed <= budget ? "met" : "NOT met"}`,
      },
    ];
  } finally {
    for (const caller of callers) await caller.close();
    rmSync(root, { recursive: true, force: true });
  }
}
