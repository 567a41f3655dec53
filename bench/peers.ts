// `npm run bench:peers`: harness and Pi (@mariozechner/pi-coding-agent 0.73.1) side by side on the
// same three-step task (read, edit, answer) against the same local mock OpenAI-compatible server.
// Not part of `npm test`: it installs Pi into a scratch folder under the OS temp directory.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import {
  HARNESS_TOOLS,
  HELLO_ACCEPT,
  HELLO_AFTER,
  HELLO_BEFORE,
  HELLO_FILE,
  HELLO_GOAL,
  helloScript,
  readVersion,
  type Toolset,
} from "../test/e2e-providers/hello-task.js";
import { type MockServer, startMockServer } from "../test/e2e-providers/mock-server.js";

const PI_PACKAGE = "@mariozechner/pi-coding-agent";
const PI_VERSION = "0.73.1";
const SCRATCH = join(tmpdir(), "harness-bench-peers");
const PI_PREFIX = join(SCRATCH, `pi-${PI_VERSION}`);
const PI_DIR = join(PI_PREFIX, "node_modules", ...PI_PACKAGE.split("/"));
const HARNESS_BIN = fileURLToPath(new URL("../src/cli/bin.js", import.meta.url));
const TASK_RUNS = 3;
const START_RUNS = 7;
const GOALS = { wall: 0.12, rss: 0.4, version: 1.2 };

/** Pi's own tool names and argument shapes (dist/core/tools/read.js and edit.js in 0.73.1). */
const PI_TOOLS: Toolset = {
  readName: "read",
  editName: "edit",
  readArgs: (path) => ({ path }),
  editArgs: (path) => ({ path, edits: [{ oldText: "helo, harness", newText: "hello, harness" }] }),
  versioned: false,
  versionIn: () => undefined,
  truncatedEditArgs: (path) =>
    `{"path":${JSON.stringify(path)},"edits":[{"oldText":"helo, harness","newText":"hel`,
};

interface Measured {
  code: number | null;
  signal: NodeJS.Signals | null;
  wallMs: number;
  maxRssKb: number | undefined;
  stdout: string;
  stderr: string;
}

type RssMethod = "/usr/bin/time -f %M" | "/proc/<pid>/status VmHWM (polled)";
const TIME_BIN = "/usr/bin/time";
const rssMethod: RssMethod = existsSync(TIME_BIN)
  ? "/usr/bin/time -f %M"
  : "/proc/<pid>/status VmHWM (polled)";

/** Run a command to completion, measuring wall time and peak resident memory. */
async function measure(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<Measured> {
  const rssFile = join(SCRATCH, `rss-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const viaTime = rssMethod === "/usr/bin/time -f %M";
  const [file, argv] = viaTime
    ? [TIME_BIN, ["-f", "%M", "-o", rssFile, command, ...args]]
    : [command, [...args]];
  const started = performance.now();
  const child = spawn(file, argv, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
  let polledKb: number | undefined;
  const poll = viaTime
    ? undefined
    : setInterval(() => {
        try {
          const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
          const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
          if (Number.isFinite(kb)) polledKb = Math.max(polledKb ?? 0, kb);
        } catch {
          // The process is gone between polls.
        }
      }, 10);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (c, s) => resolve([c, s]));
  });
  const wallMs = performance.now() - started;
  if (poll !== undefined) clearInterval(poll);
  let maxRssKb = polledKb;
  if (viaTime) {
    const lines = (await readFile(rssFile, "utf8").catch(() => "")).trim().split("\n");
    const kb = Number(lines.at(-1));
    maxRssKb = Number.isFinite(kb) && kb > 0 ? kb : undefined;
    await rm(rssFile, { force: true });
  }
  return { code, signal, wallMs, maxRssKb, stdout, stderr };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, NO_COLOR: "1" };
  for (const name of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HARNESS_CONFIG", "NODE_OPTIONS", "FORCE_COLOR"])
    delete env[name];
  return { ...env, ...extra };
}

// ---------------------------------------------------------------------------------------------
// The two agents

interface Agent {
  name: string;
  tools: Toolset;
  /** The command running the task in `workspace` against `server`. */
  taskCommand(
    server: MockServer,
    workspace: string,
    home: string,
  ): Promise<[string, string[], NodeJS.ProcessEnv]>;
  versionCommand(home: string): [string, string[], NodeJS.ProcessEnv];
}

const harness: Agent = {
  name: "harness",
  tools: HARNESS_TOOLS,
  async taskCommand(server, workspace, home) {
    const args = [
      HARNESS_BIN,
      "run",
      "--provider",
      "openai-compatible",
      "--model",
      "mock-model",
      "--base-url",
      server.baseUrl,
      "-w",
      workspace,
      "--write",
      "allow",
      "--accept",
      HELLO_ACCEPT,
      HELLO_GOAL,
    ];
    return [process.execPath, args, cleanEnv(home)];
  },
  versionCommand: (home) => [process.execPath, [HARNESS_BIN, "--version"], cleanEnv(home)],
};

function piAgent(): Agent {
  const cli = join(PI_DIR, "dist", "cli.js");
  const agentDir = (home: string) => join(home, "pi-agent");
  const piEnv = (home: string) => cleanEnv(home, { PI_OFFLINE: "1", PI_CODING_AGENT_DIR: agentDir(home) });
  return {
    name: `pi ${PI_VERSION}`,
    tools: PI_TOOLS,
    // Pi works in its current directory, which is the workspace.
    async taskCommand(server, _workspace, home) {
      // docs/models.md: a custom provider speaking Chat Completions at the mock's base URL.
      const models = {
        providers: {
          mock: {
            baseUrl: server.baseUrl,
            api: "openai-completions",
            apiKey: "mock-key-not-a-secret",
            compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
            models: [
              { id: "mock-model", reasoning: false, input: ["text"], contextWindow: 128000, maxTokens: 4096 },
            ],
          },
        },
      };
      await mkdir(agentDir(home), { recursive: true });
      await writeFile(join(agentDir(home), "models.json"), JSON.stringify(models, null, 2));
      // Print mode (-p): process the prompt non-interactively and exit; no session file.
      const args = [cli, "-p", "--no-session", "--provider", "mock", "--model", "mock-model", HELLO_GOAL];
      return [process.execPath, args, piEnv(home)];
    },
    versionCommand: (home) => [process.execPath, [cli, "--version"], piEnv(home)],
  };
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface TaskRun extends Measured {
  fileAfter: string;
  requests: number;
  scriptFailures: string[];
}

async function runTask(agent: Agent, options: { cutEdit: boolean; without?: string }): Promise<TaskRun> {
  const root = await mkdtemp(join(SCRATCH, "run-"));
  const workspace = join(root, "workspace");
  const home = join(root, "home");
  await mkdir(workspace, { recursive: true });
  await mkdir(home, { recursive: true });
  await writeFile(join(workspace, HELLO_FILE), HELLO_BEFORE);
  const tools = agent.tools;
  const server = await startMockServer({
    dialect: "chat",
    script: helloScript({
      tools,
      inject: (request) =>
        options.cutEdit && request.step === 1
          ? {
              kind: "truncated",
              call: {
                id: "call_edit_cut",
                name: tools.editName,
                argumentsPrefix: tools.truncatedEditArgs(
                  HELLO_FILE,
                  tools.versioned ? readVersion(request, tools) : undefined,
                ),
              },
              usage: { input: 900, output: 4096 },
            }
          : undefined,
    }),
  });
  try {
    const [command, args, env] = await agent.taskCommand(server, workspace, home);
    if (options.without !== undefined) delete env[options.without];
    const measured = await measure(command, args, { cwd: workspace, env });
    const fileAfter = await readFile(join(workspace, HELLO_FILE), "utf8");
    return { ...measured, fileAfter, requests: server.requests.length, scriptFailures: [...server.failures] };
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}

interface TaskStats {
  wallMs: number;
  rssKb: number | undefined;
  failures: string[];
}

/**
 * The task's median wall time and peak memory for each agent. The agents take turns, so drift in
 * machine load (other processes on a shared host) lands on all of them alike.
 */
async function taskStats(agents: readonly Agent[], without?: string): Promise<TaskStats[]> {
  const stats = agents.map(() => ({ walls: [] as number[], rss: [] as number[], failures: [] as string[] }));
  for (let i = 0; i < TASK_RUNS; i++) {
    for (const [index, agent] of agents.entries()) {
      const { walls, rss, failures } = stats[index]!;
      const run = await runTask(agent, { cutEdit: false, ...(without !== undefined ? { without } : {}) });
      if (run.code !== 0 || run.fileAfter !== HELLO_AFTER || run.scriptFailures.length > 0) {
        failures.push(
          `run ${i + 1}: exit ${run.code ?? run.signal}, file ${JSON.stringify(run.fileAfter)}` +
            `${run.scriptFailures.length > 0 ? `, server: ${run.scriptFailures.join("; ")}` : ""}` +
            `${run.code !== 0 ? `, stderr: ${tail(run.stderr)}` : ""}`,
        );
      }
      walls.push(run.wallMs);
      if (run.maxRssKb !== undefined) rss.push(run.maxRssKb);
    }
  }
  return stats.map(({ walls, rss, failures }) => ({
    wallMs: median(walls),
    rssKb: rss.length > 0 ? median(rss) : undefined,
    failures,
  }));
}

/**
 * Median start-up time of each command. The commands take turns, so drift in machine load
 * (other processes on a shared host) lands on all of them alike.
 */
async function startTimes(commands: readonly [string, string[], NodeJS.ProcessEnv][]): Promise<number[]> {
  const walls: number[][] = commands.map(() => []);
  for (let i = 0; i < START_RUNS; i++) {
    for (const [index, [file, args, env]] of commands.entries()) {
      const run = await measure(file, args, { cwd: SCRATCH, env });
      if (run.code !== 0)
        throw new Error(`${args.join(" ")} exited ${run.code ?? run.signal}: ${tail(run.stderr)}`);
      walls[index]!.push(run.wallMs);
    }
  }
  return walls.map(median);
}

interface CutOutcome {
  exit: string;
  fileAfter: string;
  changed: boolean;
  requests: number;
}

async function cutOutcome(agent: Agent): Promise<CutOutcome> {
  const run = await runTask(agent, { cutEdit: true });
  return {
    exit: String(run.code ?? run.signal),
    fileAfter: run.fileAfter,
    changed: run.fileAfter !== HELLO_BEFORE,
    requests: run.requests,
  };
}

// ---------------------------------------------------------------------------------------------
// Installing Pi

async function installPi(): Promise<void> {
  const manifest = join(PI_DIR, "package.json");
  if (existsSync(manifest)) {
    const version = (JSON.parse(await readFile(manifest, "utf8")) as { version?: unknown }).version;
    if (version === PI_VERSION) return;
  }
  await mkdir(PI_PREFIX, { recursive: true });
  process.stderr.write(`installing ${PI_PACKAGE}@${PI_VERSION} into ${PI_PREFIX} ...\n`);
  const run = await measure(
    "npm",
    ["install", "--prefix", PI_PREFIX, "--no-audit", "--no-fund", `${PI_PACKAGE}@${PI_VERSION}`],
    { cwd: PI_PREFIX, env: process.env },
  );
  if (run.code !== 0) throw new Error(`npm install exited ${run.code ?? run.signal}: ${tail(run.stderr)}`);
  if (!existsSync(join(PI_DIR, "dist", "cli.js")))
    throw new Error(`npm install left no ${PI_DIR}/dist/cli.js`);
}

function tail(text: string, lines = 6): string {
  return text.trim().split("\n").slice(-lines).join(" | ").slice(0, 600);
}

// ---------------------------------------------------------------------------------------------
// Report

function fmt(value: number | undefined, digits = 0): string {
  return value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);
}

function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b;
}

function times(value: number | undefined): string {
  return value === undefined ? "n/a" : `${value.toFixed(2)}x`;
}

function difference(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a - b;
}

function verdict(value: number | undefined, goal: number): string {
  if (value === undefined) return "";
  return `${value <= goal ? "met" : "NOT met"} (goal ≤ ${goal}x)`;
}

function describeCut(cut: CutOutcome | undefined): string {
  if (cut === undefined) return "n/a";
  return `exit ${cut.exit}; ${cut.changed ? "FILE CHANGED" : "file unchanged"} -> ${JSON.stringify(cut.fileAfter)}; ${cut.requests} model requests`;
}

async function main(): Promise<void> {
  await mkdir(SCRATCH, { recursive: true });
  if (!existsSync(HARNESS_BIN)) throw new Error(`harness is not built: ${HARNESS_BIN} (run: npm run build)`);

  const loadBefore = loadavg();
  const harnessCut = await cutOutcome(harness);
  const nodeCommand: [string, string[], NodeJS.ProcessEnv] = [
    process.execPath,
    ["-e", "0"],
    cleanEnv(SCRATCH),
  ];

  let piProblem: string | undefined;
  let harnessTask: TaskStats | undefined;
  let piTask: TaskStats | undefined;
  let piStart: number | undefined;
  let piCut: CutOutcome | undefined;
  let nodeStart: number | undefined;
  let harnessStart: number | undefined;
  // Where the environment names extra CA certificates, Node 20 loads them at every process start
  // (about 100 ms on the development machine), before either agent runs a line. Both agents pay
  // it alike, so the task is also run without it: the ratio of what the agents themselves cost.
  const extraCerts = process.env.NODE_EXTRA_CA_CERTS === undefined ? undefined : "NODE_EXTRA_CA_CERTS";
  let withoutCerts: { harness: TaskStats; pi: TaskStats; node: number; nodeWith: number } | undefined;
  try {
    await installPi();
    const pi = piAgent();
    process.stderr.write(`harness and ${pi.name}, taking turns ...\n`);
    [harnessTask, piTask] = await taskStats([harness, pi]);
    piCut = await cutOutcome(pi);
    if (extraCerts !== undefined) {
      process.stderr.write(`again without ${extraCerts} ...\n`);
      const [h, p] = await taskStats([harness, pi], extraCerts);
      const bare = cleanEnv(SCRATCH);
      delete bare[extraCerts];
      const [nodeWith, node] = await startTimes([nodeCommand, [process.execPath, ["-e", "0"], bare]]);
      if (h !== undefined && p !== undefined && node !== undefined && nodeWith !== undefined)
        withoutCerts = { harness: h, pi: p, node, nodeWith };
    }
    const piHome = await mkdtemp(join(SCRATCH, "pi-home-"));
    try {
      process.stderr.write("start-up times ...\n");
      [nodeStart, harnessStart, piStart] = await startTimes([
        nodeCommand,
        harness.versionCommand(SCRATCH),
        pi.versionCommand(piHome),
      ]);
    } finally {
      await rm(piHome, { recursive: true, force: true });
    }
  } catch (error) {
    piProblem = (error as Error).message;
  }
  if (harnessTask === undefined) {
    process.stderr.write("harness ...\n");
    harnessTask = (await taskStats([harness]))[0];
  }
  if (harnessTask === undefined) throw new Error("no harness task figures");
  if (harnessStart === undefined || nodeStart === undefined) {
    [nodeStart, harnessStart] = await startTimes([nodeCommand, harness.versionCommand(SCRATCH)]);
  }

  const loadAfter = loadavg();
  const wallRatio = ratio(harnessTask.wallMs, piTask?.wallMs);
  const versionRatio = ratio(harnessStart, nodeStart);
  const rssRatio = ratio(harnessTask.rssKb, piTask?.rssKb);
  const rows: [string, string, string, string][] = [
    ["", "harness", `pi ${PI_VERSION}`, "harness / pi"],
    [
      "task wall time, ms (median)",
      fmt(harnessTask.wallMs),
      fmt(piTask?.wallMs),
      `${times(wallRatio)}  ${verdict(wallRatio, GOALS.wall)}`,
    ],
    [
      "task max RSS, MiB (median)",
      fmt(harnessTask.rssKb === undefined ? undefined : harnessTask.rssKb / 1024, 1),
      fmt(piTask?.rssKb === undefined ? undefined : piTask.rssKb / 1024, 1),
      `${times(rssRatio)}  ${verdict(rssRatio, GOALS.rss)}`,
    ],
    ["--version start, ms (median)", fmt(harnessStart), fmt(piStart), times(ratio(harnessStart, piStart))],
    [
      "  over `node -e 0`, ms",
      fmt(difference(harnessStart, nodeStart)),
      fmt(difference(piStart, nodeStart)),
      `node -e 0: ${fmt(nodeStart)} ms`,
    ],
    [
      "--version / `node -e 0`",
      times(versionRatio),
      times(ratio(piStart, nodeStart)),
      verdict(versionRatio, GOALS.version),
    ],
  ];
  const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c]!.length)));
  const out: string[] = [
    `peers: the hello.txt task (read, edit, answer) against one mock OpenAI-compatible server on 127.0.0.1`,
    `${TASK_RUNS} task runs and ${START_RUNS} start-ups each, taking turns; peak RSS via ${rssMethod}; node ${process.version}`,
    `load average (1, 5, 15 min) before: ${loadBefore.map((l) => l.toFixed(2)).join(", ")}; after: ${loadAfter.map((l) => l.toFixed(2)).join(", ")} on ${cpus().length} cores`,
    "",
    ...rows.map(
      (r) =>
        `${r[0].padEnd(widths[0]!)}  ${r[1].padStart(widths[1]!)}  ${r[2].padStart(widths[2]!)}  ${r[3]}`,
    ),
    ...(withoutCerts === undefined
      ? []
      : [
          "",
          `without ${extraCerts} (set here; Node 20 loads the named certificates at every start: \`node -e 0\` ${fmt(withoutCerts.nodeWith)} ms with it, ${fmt(withoutCerts.node)} ms without):`,
          `  task wall time, ms (median)  harness ${fmt(withoutCerts.harness.wallMs)}  pi ${fmt(withoutCerts.pi.wallMs)}  ${times(ratio(withoutCerts.harness.wallMs, withoutCerts.pi.wallMs))}`,
          `  task max RSS, MiB (median)   harness ${fmt(withoutCerts.harness.rssKb === undefined ? undefined : withoutCerts.harness.rssKb / 1024, 1)}  pi ${fmt(withoutCerts.pi.rssKb === undefined ? undefined : withoutCerts.pi.rssKb / 1024, 1)}  ${times(ratio(withoutCerts.harness.rssKb, withoutCerts.pi.rssKb))}`,
        ]),
    "",
    "a reply that ends with `length` in the middle of an edit's arguments:",
    `  harness: ${describeCut(harnessCut)}`,
    `  pi:      ${piCut === undefined ? "n/a" : describeCut(piCut)}`,
  ];
  for (const failure of harnessTask.failures) out.push(`harness task FAILED: ${failure}`);
  for (const failure of piTask?.failures ?? []) out.push(`pi task FAILED: ${failure}`);
  if (piProblem !== undefined) {
    out.push("", `Pi could not be installed or run, so only harness's numbers are shown: ${piProblem}`);
  }
  process.stdout.write(`${out.join("\n")}\n`);
}

await main();
