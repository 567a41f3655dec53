import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import type { EngineListener } from "../src/engine/options.js";
import { MemoryJournalBackend } from "../src/journal/memory-store.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import type { ModelMessage } from "../src/protocol/types.js";
import { chatRequestBody } from "../src/providers/chat-completions-wire.js";
import type { ModelRequest, Provider } from "../src/providers/provider.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { sha256Hex } from "../src/shared/hash.js";
import { createFileTools } from "../src/tools/builtin.js";
import { DiskWorkspaceFs } from "../src/workspace/disk-fs.js";
import { type BenchRow, median, round } from "./stats.js";

/**
 * Context benchmarks over scripted sessions whose every step reads a large file: (a) bytes sent
 * against a naive full history, (b) how much of each request repeats the previous one byte for
 * byte (what a provider's prompt cache can serve), (c) the cost of building a request late in a
 * long session against early in it.
 */

/** Per request: the step, the messages sent, and when the engine handed it to the provider. */
interface Sent {
  request: ModelRequest;
  at: number;
  /** When the record before this request's model.started was written. */
  previousRecordAt: number;
}

async function session(root: string, steps: number): Promise<Sent[]> {
  const registry = new ToolRegistry();
  for (const tool of createFileTools()) registry.register(tool);
  const policy = modePolicy({ write: "allow" });
  const sent: Sent[] = [];
  let lastRecordAt = 0;
  let beforeStarted = 0;
  const listener: EngineListener = {
    record(record) {
      if (record.type === "model.started") beforeStarted = lastRecordAt;
      lastRecordAt = performance.now();
    },
  };
  const scripted = ScriptedProvider.fromFunction(
    (_m, step) =>
      step < steps
        ? {
            text: `Reading part ${step % 10}.`,
            calls: [
              {
                id: `r${step}`,
                name: "read_file",
                arguments: { path: "src/big.ts", offset: 1 + (step % 10) * 100, limit: 100 },
              },
            ],
          }
        : { text: "done" },
    "bench-context",
  );
  const provider: Provider = {
    identity: scripted.identity,
    stream(request, signal) {
      sent.push({ request, at: performance.now(), previousRecordAt: beforeStarted });
      return scripted.stream(request, signal);
    },
  };
  const engine = new Engine({
    sessionId: "context",
    backend: new MemoryJournalBackend(),
    provider,
    runtime: {
      snapshot: registry.snapshot(),
      fs: await DiskWorkspaceFs.create(root),
      hostRoot: root,
      artifacts: new MemoryArtifactStore(),
      approver: { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) },
    },
    workspace: { name: "bench", fingerprint: sha256Hex(root) },
    goal: `read a large file ${steps} times`,
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: [],
    // Nothing is pruned yet, so the whole history must fit: the window is set far above it.
    limits: { maxModelRequests: steps + 5, maxToolCalls: steps + 5, contextWindowTokens: 100_000_000 },
    mode: "new",
    harnessVersion: "bench",
    listener,
  });
  const summary = await engine.run();
  if (summary.tool_calls !== steps)
    throw new Error(
      `context bench session ended early: ${summary.status} (${summary.reason}, ${summary.tool_calls} calls)`,
    );
  return sent;
}

/** Length of the common prefix of two strings, compared in slices first. */
function commonPrefix(a: string, b: string): number {
  const max = Math.min(a.length, b.length);
  const SLICE = 4096;
  let i = 0;
  while (i + SLICE <= max && a.slice(i, i + SLICE) === b.slice(i, i + SLICE)) i += SLICE;
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i += 1;
  return i;
}

/** The Chat Completions body harness would send: the bytes a provider's prompt cache sees. */
function wireBody(request: ModelRequest): string {
  return JSON.stringify(
    chatRequestBody({
      model: "bench",
      messages: request.messages,
      tools: request.tools,
      cacheKey: request.cacheKey,
    }),
  );
}

const bytes = (messages: readonly ModelMessage[]) => Buffer.byteLength(JSON.stringify(messages));

/** What a naive full history adds at each request: the last reply and everything after it. */
function newTail(messages: readonly ModelMessage[]): readonly ModelMessage[] {
  const lastReply = messages.findLastIndex((m) => m.role === "assistant");
  return lastReply === -1 ? messages : messages.slice(lastReply);
}

function buildMs(sent: readonly Sent[], around: number): number {
  return median(sent.slice(around - 5, around + 5).map((s) => s.at - s.previousRecordAt));
}

export async function benchContext(): Promise<BenchRow[]> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-context-")));
  try {
    mkdirSync(join(root, "src"));
    // 1000 lines of ~80 bytes: each read of 100 lines is an ~8 KB tool result.
    const line = (i: number) => `export const value${i} = "${"x".repeat(50)}"; // line ${i}`;
    writeFileSync(join(root, "src/big.ts"), Array.from({ length: 1000 }, (_, i) => line(i)).join("\n"));

    const short = await session(root, 200);
    // (b) the share of each request that repeats the previous one, on the wire.
    const shares: number[] = [];
    let previous: string | undefined;
    for (const { request } of short) {
      const body = wireBody(request);
      if (previous !== undefined) shares.push(commonPrefix(previous, body) / body.length);
      previous = body;
    }
    // (a) bytes sent against a history that keeps everything (≈ 4 bytes a token).
    let naive = 0;
    let naiveTotal = 0;
    let sentTotal = 0;
    for (const [i, { request }] of short.entries()) {
      naive += i === 0 ? bytes(request.messages) : bytes(newTail(request.messages));
      naiveTotal += naive;
      sentTotal += bytes(request.messages);
    }

    const long = await session(root, 1000);
    const early = buildMs(long, 10);
    const late = buildMs(long, 1000);
    const tokens = (n: number) => Math.round(n / 4);
    return [
      {
        name: "200 steps of ~8 KB results: input sent, total",
        value: tokens(sentTotal),
        unit: "tokens",
        note: "≈ bytes/4",
      },
      {
        name: "200 steps: input sent / naive full history",
        value: round(sentTotal / naiveTotal, 3),
        unit: "x",
        note: "1.0 until pruning or compaction removes anything",
      },
      {
        name: "200 steps: request repeating the previous one's prefix, median",
        value: round(median(shares), 4),
        unit: "share",
        note: "Chat Completions body; goal >= 0.95",
      },
      {
        name: "200 steps: request repeating the previous one's prefix, minimum after step 10",
        value: round(Math.min(...shares.slice(10)), 4),
        unit: "share",
      },
      { name: "request build at step 10", value: round(early, 4), unit: "ms", note: "median of steps 5-14" },
      {
        name: "request build at step 1000",
        value: round(late, 4),
        unit: "ms",
        note: "median of steps 995-1000",
      },
      {
        name: "request build: step 1000 / step 10",
        value: round(late / early, 2),
        unit: "x",
        note: "goal <= 2x",
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
