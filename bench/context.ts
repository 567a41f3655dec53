import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import type { EngineListener } from "../src/engine/options.js";
import { MemoryJournalStore } from "../src/journal/memory-store.js";
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
 * Context benchmarks over scripted sessions whose every step reads a large file, with a window
 * small enough that old results are pruned and the history compacted many times: (a) input sent
 * against a naive full history, (b) how much of each request repeats the previous one byte for
 * byte (what a provider's prompt cache can serve) between compactions, (c) the cost of building a
 * request late in a long session against early in it. (b) is also set against its bound: the
 * reply and results a step adds are new to the provider, so a request can repeat at most the whole
 * previous one; over a session, the bytes a cache can serve over the bytes sent is the share a bill
 * shows, pruning included.
 */

/**
 * Small enough that a few ~2000-token results fill it: pruning and compaction really happen. The
 * larger one holds a couple of dozen results, as a real model's window holds a real session's:
 * there pruning alone keeps the session going, and what it does to the cache shows.
 */
const SMALL_WINDOW = 16_000;
const LARGER_WINDOW = 64_000;

/** Per ordinary request: the step, the messages sent, and when the engine handed it to the provider. */
interface Sent {
  request: ModelRequest;
  at: number;
  /**
   * When the step before it ended (its last tool result was recorded): building a request
   * includes pruning and compacting, whose records come before its model.started.
   */
  stepEndedAt: number;
  /** Whether a summary replaced older turns, or old results were pruned, since the previous request. */
  compactedBefore: boolean;
  prunedBefore: boolean;
}

interface SessionRun {
  sent: Sent[];
  /** The requests that asked for a summary (their messages), which count as input sent too. */
  summaries: ModelRequest[];
  compactions: number;
  prunes: number;
}

async function session(root: string, steps: number, window: number, lines = 100): Promise<SessionRun> {
  const registry = new ToolRegistry();
  for (const tool of createFileTools()) registry.register(tool);
  const policy = modePolicy({ write: "allow" });
  const sent: Sent[] = [];
  const summaries: ModelRequest[] = [];
  let stepEndedAt = 0;
  let compactions = 0;
  let prunes = 0;
  let compactedSince = false;
  let prunedSince = false;
  const listener: EngineListener = {
    record(record) {
      if (record.type === "context.compacted") [compactions, compactedSince] = [compactions + 1, true];
      if (record.type === "context.pruned") [prunes, prunedSince] = [prunes + 1, true];
      if (record.type === "tool.result" || record.type === "user.input") stepEndedAt = performance.now();
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
                arguments: { path: "src/big.ts", offset: 1 + (step % 10) * 100, limit: lines },
              },
            ],
          }
        : { text: "done" },
    "bench-context",
  );
  const provider: Provider = {
    identity: scripted.identity,
    stream(request, signal) {
      if (request.purpose === "compaction") {
        summaries.push(request);
        return summaryStream(request.step);
      }
      sent.push({
        request,
        at: performance.now(),
        stepEndedAt,
        compactedBefore: compactedSince,
        prunedBefore: prunedSince,
      });
      [compactedSince, prunedSince] = [false, false];
      return scripted.stream(request, signal);
    },
  };
  const engine = new Engine({
    sessionId: "context",
    store: new MemoryJournalStore(),
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
    limits: { maxModelRequests: 2 * steps + 5, maxToolCalls: steps + 5, contextWindowTokens: window },
    mode: "new",
    harnessVersion: "bench",
    listener,
  });
  const summary = await engine.run();
  if (summary.tool_calls !== steps)
    throw new Error(
      `context bench session ended early: ${summary.status} (${summary.reason}, ${summary.tool_calls} calls)`,
    );
  return { sent, summaries, compactions, prunes };
}

/** A handoff summary as a model would stream it. */
async function* summaryStream(step: number): AsyncIterable<unknown> {
  yield {
    type: "text_delta",
    text: `Goal: read src/big.ts in parts. Progress: ${step} parts read. Next: keep reading.`,
  };
  yield { type: "end", reason: "stop" };
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

/**
 * The Chat Completions body harness would send, in the order a provider renders and caches it:
 * the tool definitions, then the conversation.
 */
function cachedText(request: ModelRequest): string {
  const body = chatRequestBody({
    model: "bench",
    messages: request.messages,
    tools: request.tools,
    cacheKey: request.cacheKey,
  });
  return JSON.stringify([body.model, body.tools]) + JSON.stringify(body.messages);
}

const bytes = (messages: readonly ModelMessage[]) => Buffer.byteLength(JSON.stringify(messages));

/** What a naive full history adds at each request: the last reply and everything after it. */
function newTail(messages: readonly ModelMessage[]): readonly ModelMessage[] {
  const lastReply = messages.findLastIndex((m) => m.role === "assistant");
  return lastReply === -1 ? messages : messages.slice(lastReply);
}

function buildMs(sent: readonly Sent[], around: number): number {
  return median(sent.slice(around - 5, around + 5).map((s) => s.at - s.stepEndedAt));
}

/**
 * How one request stands against the one before it, in the bytes a provider caches (tools, then
 * the conversation): `common` is the prefix it sends again unchanged (what a prefix cache serves),
 * `bound` the most it could: the previous request whole, since everything after it (the reply and
 * the step's tool results) is new. A request that only extends the previous one has common = bound.
 */
interface Pair {
  total: number;
  common: number;
  bound: number;
  /** The previous request's length: what a provider wrote to its cache last time. */
  previous: number;
  pruned: boolean;
}

function pairs(run: SessionRun): Pair[] {
  const out: Pair[] = [];
  let previous: string | undefined;
  for (const { request, compactedBefore, prunedBefore } of run.sent) {
    const text = cachedText(request);
    // Between compactions: a summary replaces the older turns, so that request starts a new prefix.
    if (previous !== undefined && !compactedBefore) {
      // The previous conversation's closing bracket is the one byte an extension changes.
      const bound = Math.min(previous.length - 1, text.length);
      out.push({
        total: text.length,
        common: Math.min(commonPrefix(previous, text), bound),
        bound,
        previous: previous.length,
        pruned: prunedBefore,
      });
    }
    previous = text;
  }
  return out;
}

/** (a) and (b) over one session. */
function sessionRows(run: SessionRun, window: number, results = "~8 KB results"): BenchRow[] {
  // (b) the share of each request that repeats the previous one byte for byte, between
  // compactions; the bound the step's new bytes set on it; the share of the previous request a
  // prompt cache could serve again; and over the whole session, as a provider bills it, the bytes
  // it could serve from its cache over all the bytes sent.
  const shares = pairs(run);
  const unpruned = shares.filter((s) => !s.pruned);
  const sum = (list: readonly Pair[], f: (p: Pair) => number) => list.reduce((n, p) => n + f(p), 0);
  // (a) bytes sent (summary requests included) against a history that keeps everything.
  let naive = 0;
  let naiveTotal = 0;
  let sentTotal = run.summaries.reduce((n, request) => n + bytes(request.messages), 0);
  for (const [i, { request }] of run.sent.entries()) {
    naive += i === 0 ? bytes(request.messages) : bytes(newTail(request.messages));
    naiveTotal += naive;
    sentTotal += bytes(request.messages);
  }
  const tokens = (n: number) => Math.round(n / 4);
  const at = `${window / 1000}K window${results === "~8 KB results" ? "" : `, ${results}`}`;
  const newBytes = median(unpruned.map((s) => s.total - s.bound));
  return [
    {
      name: `200 steps, ${at}: prunes`,
      value: run.prunes,
      unit: "prunes",
      note: `${run.compactions} compactions`,
    },
    {
      name: `${at}: input sent / naive full history`,
      value: round(sentTotal / naiveTotal, 3),
      unit: "x",
      note: `${tokens(sentTotal)} vs ${tokens(naiveTotal)} tokens (bytes/4), summary requests included`,
    },
    {
      name: `${at}: request repeating the previous one's prefix, median`,
      value: round(median(shares.map((s) => s.common / s.total)), 4),
      unit: "share",
      note: `tools + messages as cached, between compactions (${shares.length} pairs); goal >= 0.95`,
    },
    {
      name: `${at}: bound set by the step's new bytes, median`,
      value: round(median(shares.map((s) => s.bound / s.total)), 4),
      unit: "share",
      note: `the previous request / this one: the reply and its results (median ${newBytes} bytes) are new`,
    },
    {
      name: `${at}: the same, pairs with nothing pruned between them`,
      value: unpruned.length === 0 ? Number.NaN : round(median(unpruned.map((s) => s.common / s.total)), 4),
      unit: "share",
      note: `median of ${unpruned.length} pairs; reaches its bound in ${unpruned.filter((s) => s.common === s.bound).length}`,
    },
    {
      name: `${at}: bytes a prefix cache can serve / bytes sent`,
      value: round(sum(shares, (s) => s.common) / sum(shares, (s) => s.total), 4),
      unit: "share",
      note: `all ${shares.length} requests between compactions, as billed; bound ${round(sum(shares, (s) => s.bound) / sum(shares, (s) => s.total), 4)}, prunes included`,
    },
    {
      name: `${at}: share of the previous request sent again unchanged`,
      value: round(median(shares.map((s) => (s.common + 1) / s.previous)), 4),
      unit: "share",
      note: "median; what a prompt cache can serve: 1.0 when a request extends the previous one",
    },
    {
      name: `${at}: requests extending the previous one byte for byte`,
      value: round(shares.filter((s) => s.common === s.bound && s.bound < s.total).length / shares.length, 3),
      unit: "of pairs",
      note: "a result pruned since the previous request breaks the prefix there",
    },
  ];
}

export async function benchContext(): Promise<BenchRow[]> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-context-")));
  try {
    mkdirSync(join(root, "src"));
    // 1000 lines of ~80 bytes: each read of 100 lines is an ~8 KB tool result.
    const line = (i: number) => `export const value${i} = "${"x".repeat(50)}"; // line ${i}`;
    writeFileSync(join(root, "src/big.ts"), Array.from({ length: 1000 }, (_, i) => line(i)).join("\n"));

    const small = sessionRows(await session(root, 200, SMALL_WINDOW), SMALL_WINDOW);
    const larger = sessionRows(await session(root, 200, LARGER_WINDOW), LARGER_WINDOW);
    // The same window with ~2 KB results: the step's new bytes are what bound the share.
    const smaller = sessionRows(await session(root, 200, LARGER_WINDOW, 25), LARGER_WINDOW, "~2 KB results");
    // (c) with the small window: the context stays bounded, so building a request should too.
    const long = await session(root, 1000, SMALL_WINDOW);
    const early = buildMs(long.sent, 10);
    const late = buildMs(long.sent, 1000);
    return [
      ...small,
      ...larger,
      ...smaller,
      { name: "request build at step 10", value: round(early, 4), unit: "ms", note: "median of steps 5-14" },
      {
        name: "request build at step 1000",
        value: round(late, 4),
        unit: "ms",
        note: `median of steps 995-1000; ${long.prunes} prunes, ${long.compactions} compactions in 1000 steps`,
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
