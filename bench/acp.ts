// Issue 36: what `harness acp` adds per ACP update over `harness run --events` on the same
// scripted session (both the built CLI in dist/), one run each, the editor played by the SDK's client.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, type Writable, Writable as WritableStreams } from "node:stream";
import { fileURLToPath } from "node:url";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";
import { type BenchRow, round } from "./stats.js";

const STEPS = 200;
const BIN = fileURLToPath(new URL("../src/cli/bin.js", import.meta.url));

interface Setup {
  root: string;
  workspace: string;
  script: string;
  env: NodeJS.ProcessEnv;
}

function setup(): Setup {
  const root = mkdtempSync(join(tmpdir(), "harness-bench-acp-"));
  const workspace = join(root, "ws");
  mkdirSync(workspace);
  writeFileSync(join(workspace, "file.txt"), "one line\n".repeat(20));
  const replies = [
    ...Array.from({ length: STEPS }, (_, i) => ({
      calls: [{ id: `r${i}`, name: "read_file", arguments: { path: "file.txt" } }],
    })),
    { text: "done" },
  ];
  const script = join(root, "script.json");
  writeFileSync(script, JSON.stringify({ replies }));
  const config = join(root, "config.json");
  writeFileSync(config, "{}\n");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NO_COLOR: "1",
    HARNESS_CONFIG: config,
    HARNESS_KEY_FILE: join(root, "journal.key"),
    XDG_CONFIG_HOME: join(root, "xdg"),
  };
  return { root, workspace, script, env };
}

const now = () => performance.now();

/** The turn as `harness run --events` shows it: ms from the first record line to the last, and their count. */
function cliRun(s: Setup): Promise<{ spanMs: number; lines: number }> {
  const child = spawn(
    process.execPath,
    [
      BIN,
      "run",
      "--script",
      s.script,
      "--workspace",
      s.workspace,
      "--tools",
      "readonly",
      "--events",
      "--max-model-requests",
      String(STEPS + 10),
      "read the file",
    ],
    { env: s.env, stdio: ["ignore", "pipe", "ignore"] },
  );
  const stamps: number[] = [];
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    const at = now();
    for (const line of chunk.split("\n")) if (line.startsWith('{"seq":')) stamps.push(at);
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", () =>
      resolve({ spanMs: (stamps.at(-1) ?? 0) - (stamps[0] ?? 0), lines: stamps.length }),
    );
  });
}

/** The same turn through `harness acp`: ms from the first update to the last, and their count. */
async function acpRun(s: Setup): Promise<{ spanMs: number; updates: number }> {
  const child = spawn(
    process.execPath,
    [BIN, "acp", "--script", s.script, "--tools", "readonly", "--max-model-requests", String(STEPS + 10)],
    { env: s.env, stdio: ["pipe", "pipe", "ignore"] },
  );
  const stamps: number[] = [];
  const app = client({ name: "bench" }).onNotification("session/update", () => {
    stamps.push(now());
  });
  const connection = app.connect(
    ndJsonStream(
      WritableStreams.toWeb(child.stdin as Writable) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
    ),
  );
  try {
    await connection.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = await connection.agent.request("session/new", { cwd: s.workspace, mcpServers: [] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    stamps.length = 0;
    await connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "read the file" }],
    });
    // First update to last, as the run's first record to last: start-up is not per update.
    return { spanMs: (stamps.at(-1) ?? 0) - (stamps[0] ?? 0), updates: stamps.length };
  } finally {
    connection.close();
    child.stdin.end();
    child.kill("SIGTERM");
  }
}

export async function benchAcp(): Promise<BenchRow[]> {
  const s = setup();
  try {
    const cli = await cliRun(s);
    const acp = await acpRun(s);
    return [
      { name: `records, harness run --events (${STEPS} read_file steps)`, value: cli.lines, unit: "records" },
      { name: "updates, harness acp", value: acp.updates, unit: "updates" },
      {
        name: "turn, harness run --events",
        value: round(cli.spanMs, 1),
        unit: "ms",
        note: "first to last record",
      },
      {
        name: "turn, harness acp",
        value: round(acp.spanMs, 1),
        unit: "ms",
        note: "first to last update; one run",
      },
      {
        name: "overhead per ACP update",
        value: round((acp.spanMs - cli.spanMs) / Math.max(acp.updates, 1), 3),
        unit: "ms/update",
        note: "(acp turn - run turn) / updates",
      },
    ];
  } finally {
    rmSync(s.root, { recursive: true, force: true });
  }
}
