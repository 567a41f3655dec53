// Issue 15: events through `harness serve` to one client, and what the server adds per event over
// `harness run --events` on the same scripted session (both read from the built CLI in dist/).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connectHttp, connectStdio, type HarnessClient } from "../src/client/index.js";
import { type BenchRow, median, round } from "./stats.js";

const STEPS = 200;
const RUNS = 3;
const BIN = fileURLToPath(new URL("../src/cli/bin.js", import.meta.url));
const TOKEN = "bench-token-0123456789abcdef";

interface Setup {
  root: string;
  workspace: string;
  script: string;
  env: NodeJS.ProcessEnv;
}

/** A workspace, a script of STEPS read_file steps, and a config and key of their own. */
function setup(): Setup {
  const root = mkdtempSync(join(tmpdir(), "harness-bench-server-"));
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
    HARNESS_SERVER_TOKEN: TOKEN,
  };
  return { root, workspace, script, env };
}

/** When an event reached us (wall clock, sub-millisecond) and when its record was journaled. */
interface Stamp {
  at: number;
  recorded: number;
}

/**
 * One run: how many events, ms per event between the first and the last (the session's pace as
 * the reader sees it), and the median delivery latency (arrival minus the record's `time`; that
 * time has millisecond resolution, which biases both ways alike, so their difference holds).
 */
interface Cadence {
  events: number;
  msPerEvent: number;
  latencyMs: number;
}

const now = () => performance.timeOrigin + performance.now();

function cadence(stamps: Stamp[]): Cadence {
  const first = stamps[0]?.at ?? 0;
  const last = stamps.at(-1)?.at ?? 0;
  return {
    events: stamps.length,
    msPerEvent: stamps.length > 1 ? (last - first) / (stamps.length - 1) : Number.NaN,
    latencyMs: median(stamps.map((s) => s.at - s.recorded)),
  };
}

/** `harness run --events`: the time each journal record line reaches our end of the pipe. */
function cliRun(s: Setup): Promise<Cadence> {
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
      "read the file",
    ],
    { env: s.env, stdio: ["ignore", "pipe", "ignore"] },
  );
  const stamps: Stamp[] = [];
  let rest = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    const at = now();
    const lines = (rest + chunk).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.startsWith('{"seq":')) continue;
      stamps.push({ at, recorded: Date.parse((JSON.parse(line) as { time: string }).time) });
    }
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", () => resolve(cadence(stamps)));
  });
}

/**
 * One session through the server: the time each durable notification reaches the client. The
 * stream is open before the turn starts, so what is measured is live delivery, not the replay of
 * records journaled before the client subscribed (a 200-step scripted turn takes well under a
 * second, so a replay would dominate the median).
 */
async function serverRun(client: HarnessClient, s: Setup): Promise<Cadence> {
  const { session } = await client.startSession({
    workspace: s.workspace,
    options: { script: s.script, tools: "readonly", max_model_requests: STEPS + 10 },
  });
  const stamps: Stamp[] = [];
  const reading = (async () => {
    for await (const event of client.events(session)) {
      if ("record" in event.params)
        stamps.push({ at: now(), recorded: Date.parse(event.params.record.time) });
      if (event.method === "turn/completed") break;
    }
  })();
  // Time for the subscription (stdio) or the SSE connection (HTTP) to be in place.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await client.startTurn(session, "read the file");
  await reading;
  return cadence(stamps);
}

async function startHttp(s: Setup): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [BIN, "serve", "--http", "127.0.0.1:0", "--json"], {
    env: s.env,
    cwd: s.workspace,
    stdio: ["ignore", "pipe", "ignore"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`harness serve --http exited (${code})`)));
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const line = out.split("\n").find((l) => l.includes('"url"'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
  });
  return { url, stop: () => child.kill("SIGTERM") };
}

export async function benchServer(): Promise<BenchRow[]> {
  const s = setup();
  try {
    const cli: Cadence[] = [];
    const stdio: Cadence[] = [];
    const http: Cadence[] = [];
    const stdioClient = await connectStdio({ cwd: s.workspace, env: s.env });
    const server = await startHttp(s);
    const httpClient = await connectHttp({ url: server.url, token: TOKEN });
    try {
      // Interleaved, so load on the machine falls on all three alike.
      for (let run = 0; run < RUNS; run++) {
        cli.push(await cliRun(s));
        stdio.push(await serverRun(stdioClient, s));
        http.push(await serverRun(httpClient, s));
      }
    } finally {
      await stdioClient.close();
      await httpClient.close();
      server.stop();
    }
    const ms = (runs: Cadence[]) => median(runs.map((r) => r.msPerEvent));
    const latency = (runs: Cadence[]) => median(runs.map((r) => r.latencyMs));
    const events = median(stdio.map((r) => r.events));
    return [
      { name: `events per run (${STEPS} read_file steps)`, value: events, unit: "events" },
      { name: "through serve --stdio to one client", value: round(1000 / ms(stdio), 0), unit: "events/s" },
      {
        name: "through serve --http (SSE) to one client",
        value: round(1000 / ms(http), 0),
        unit: "events/s",
      },
      { name: "harness run --events", value: round(ms(cli), 3), unit: "ms/event", note: `median of ${RUNS}` },
      { name: "serve --stdio, client", value: round(ms(stdio), 3), unit: "ms/event" },
      { name: "serve --http, client", value: round(ms(http), 3), unit: "ms/event" },
      {
        name: "delivery latency, harness run --events",
        value: round(latency(cli), 3),
        unit: "ms",
        note: "median",
      },
      { name: "delivery latency, serve --stdio", value: round(latency(stdio), 3), unit: "ms" },
      { name: "delivery latency, serve --http", value: round(latency(http), 3), unit: "ms" },
      {
        name: "added by the server per event (stdio)",
        value: round(latency(stdio) - latency(cli), 3),
        unit: "ms",
        note: "median latency difference; goal ≤ 1",
      },
      {
        name: "added by the server per event (http)",
        value: round(latency(http) - latency(cli), 3),
        unit: "ms",
        note: "median latency difference; goal ≤ 1",
      },
    ];
  } finally {
    rmSync(s.root, { recursive: true, force: true });
  }
}
