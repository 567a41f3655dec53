import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import type { EngineListener } from "../src/engine/options.js";
import { FileJournalStore } from "../src/journal/file-store.js";
import { startLiveExport } from "../src/otel/live.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { sha256Hex } from "../src/shared/hash.js";
import { createFileTools } from "../src/tools/builtin.js";
import { DiskWorkspaceFs } from "../src/workspace/disk-fs.js";
import { type BenchRow, median, round } from "./stats.js";

/*
 * OpenTelemetry's cost to a step: the same 200-step session (a read_file per step, file journal
 * with fsync) with live export on (to a loopback OTLP/HTTP collector in a process of its own) and
 * off, alternating, in one process. The goal is at most 5% added to the median step.
 */

const STEPS = 200;
const ROUNDS = 8;

async function timedSteps(root: string, session: string, exportOn: boolean): Promise<number[]> {
  const registry = new ToolRegistry();
  for (const tool of createFileTools()) registry.register(tool);
  const policy = modePolicy({ write: "allow" });
  const stamps: number[] = [];
  const live = exportOn ? startLiveExport(session, { version: "bench" }) : undefined;
  const listener: EngineListener = {
    record(record) {
      live?.record(record);
      if (record.type === "model.started") stamps.push(performance.now());
    },
  };
  const provider = ScriptedProvider.fromFunction(
    (_m, step) =>
      step < STEPS
        ? { calls: [{ id: `r${step}`, name: "read_file", arguments: { path: "src/file.ts", limit: 20 } }] }
        : { text: "done" },
    "bench",
  );
  const engine = new Engine({
    sessionId: session,
    store: new FileJournalStore(join(root, ".harness")),
    provider,
    runtime: {
      snapshot: registry.snapshot(),
      fs: await DiskWorkspaceFs.create(root),
      hostRoot: root,
      artifacts: new MemoryArtifactStore(),
      approver: { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) },
    },
    workspace: { name: "bench", fingerprint: sha256Hex(root) },
    goal: "read a file 200 times",
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: [],
    limits: { maxModelRequests: STEPS + 5, maxToolCalls: STEPS + 5, contextWindowTokens: 10_000_000 },
    mode: "new",
    harnessVersion: "bench",
    listener,
  });
  const summary = await engine.run();
  await live?.shutdown();
  if (summary.tool_calls !== STEPS) throw new Error(`bench session ended early: ${summary.status}`);
  return stamps.slice(1).map((t, i) => t - stamps[i]!);
}

export async function benchOtel(): Promise<BenchRow[]> {
  // The collector is a process of its own, as a real one is: receiving in this process would
  // charge the export for the collector's parsing. It prints its span count after each request.
  const collector = spawn(
    process.execPath,
    [
      "-e",
      `let spans = 0;
       const server = require("node:http").createServer((req, res) => {
         const chunks = [];
         req.on("data", (chunk) => chunks.push(chunk));
         req.on("end", () => {
           if (req.url === "/v1/traces") spans += (Buffer.concat(chunks).toString().match(/"spanId"/g) ?? []).length;
           res.writeHead(200, { "content-type": "application/json" });
           res.end("{}");
           process.stdout.write("spans " + spans + "\\n");
         });
       });
       server.listen(0, "127.0.0.1", () => process.stdout.write("port " + server.address().port + "\\n"));`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let spans = 0;
  const port = await new Promise<number>((resolve, reject) => {
    let buffered = "";
    collector.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        const [word, value] = line.split(" ");
        if (word === "port") resolve(Number(value));
        if (word === "spans") spans = Number(value);
      }
    });
    collector.once("exit", () => reject(new Error("the bench collector did not start")));
  });
  const previous = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-otel-")));
  try {
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src/file.ts"), "export const x = 1;\n".repeat(200));
    mkdirSync(join(root, ".harness/sessions"), { recursive: true });
    const off: number[] = [];
    const on: number[] = [];
    // A warm-up of each, then alternating rounds so drift on a loaded machine hits both alike.
    await timedSteps(root, "warm-off", false);
    await timedSteps(root, "warm-on", true);
    for (let round = 0; round < ROUNDS; round++) {
      off.push(...(await timedSteps(root, `off-${round}`, false)));
      on.push(...(await timedSteps(root, `on-${round}`, true)));
    }
    const offMs = median(off);
    const onMs = median(on);
    return [
      { name: "step, export off (median)", value: round(offMs), unit: "ms" },
      { name: "step, export on (median)", value: round(onMs), unit: "ms", note: `${spans} spans received` },
      {
        name: "export overhead per step",
        value: round(((onMs - offMs) / offMs) * 100, 1),
        unit: "%",
        note: "goal <= 5%",
      },
    ];
  } finally {
    if (previous === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = previous;
    rmSync(root, { recursive: true, force: true });
    collector.kill("SIGKILL");
  }
}
