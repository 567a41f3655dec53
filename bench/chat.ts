// The chat's responsiveness (issue 14): from Enter to the first streamed character on the screen,
// against a loopback model server, beyond the server's own latency; and the chat's CPU while idle.
// The built CLI runs in a real pseudo-terminal (util-linux `script`), as a person would use it.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type BenchRow, median, round } from "./stats.js";

const BIN = resolve(import.meta.dirname, "../src/cli/bin.js");
/** The mock's own delay before its first chunk: what a real provider's time to first token would be. */
const MOCK_LATENCY_MS = 20;
const TURNS = 8;
const MARK = "Ω";

/** A loopback OpenAI-compatible server streaming a short reply that starts with MARK. */
async function mockModel(): Promise<{ server: Server; url: string; arrivals: number[] }> {
  const arrivals: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      arrivals.push(performance.now());
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      setTimeout(() => {
        chunk({ choices: [{ index: 0, delta: { content: `${MARK} hello` } }] });
        chunk({
          choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
          usage: { prompt_tokens: 10, completion_tokens: 2 },
        });
        res.end("data: [DONE]\n\n");
      }, MOCK_LATENCY_MS);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return { server, arrivals, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

/** CPU time (ms) used so far by a process and all its descendants, from /proc. */
async function treeCpuMs(pid: number): Promise<number> {
  let total = 0;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    total += ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    for (const task of await readdir(`/proc/${pid}/task`)) {
      const children = (await readFile(`/proc/${pid}/task/${task}/children`, "utf8")).trim();
      for (const child of children.split(" ").filter(Boolean)) total += await treeCpuMs(Number(child));
    }
  } catch {
    // gone
  }
  return total;
}

export async function benchChat(): Promise<BenchRow[]> {
  const { server, url, arrivals } = await mockModel();
  const dir = await mkdtemp(join(tmpdir(), "harness-bench-chat-"));
  const config = join(dir, "config.json");
  await writeFile(config, "{}");
  let child: ChildProcess | undefined;
  try {
    const command = [process.execPath, BIN, "chat", "--provider", "openai-compatible", "--base-url", url]
      .concat(["--model", "mock", "--api-key-env", "BENCH_KEY", "--workspace", dir])
      .map((part) => `'${part}'`)
      .join(" ");
    child = spawn("script", ["-qfec", command, "/dev/null"], {
      env: {
        ...process.env,
        HARNESS_CONFIG: config,
        BENCH_KEY: "k",
        TERM: "xterm-256color",
        COLUMNS: "100",
        LINES: "40",
      },
      stdio: ["pipe", "pipe", "ignore"],
    });
    let screen = "";
    const waiters: { test: () => boolean; resolve: () => void }[] = [];
    child.stdout?.setEncoding("utf8").on("data", (data: string) => {
      screen += data;
      for (const waiter of waiters.splice(0)) {
        if (waiter.test()) waiter.resolve();
        else waiters.push(waiter);
      }
    });
    const until = (test: () => boolean, timeoutMs = 15_000) =>
      new Promise<void>((done, fail) => {
        if (test()) return done();
        const timer = setTimeout(
          () => fail(new Error(`chat bench timed out; screen: ${screen.slice(-400)}`)),
          timeoutMs,
        );
        waiters.push({
          test,
          resolve: () => {
            clearTimeout(timer);
            done();
          },
        });
      });
    await until(() => screen.includes("/help for keys"));
    await new Promise((done) => setTimeout(done, 300));
    const latencies: number[] = [];
    const toRequest: number[] = [];
    for (let turn = 0; turn < TURNS; turn += 1) {
      const marks = screen.split(MARK).length;
      const ends = screen.split("Ctrl-D exits").length;
      child.stdin?.write(`question ${turn}`);
      await new Promise((done) => setTimeout(done, 50));
      const sent = performance.now();
      child.stdin?.write("\r");
      await until(() => screen.split(MARK).length > marks);
      latencies.push(performance.now() - sent - MOCK_LATENCY_MS);
      toRequest.push((arrivals[arrivals.length - 1] ?? Number.NaN) - sent);
      await until(() => screen.split("Ctrl-D exits").length > ends);
    }
    const pid = child.pid ?? 0;
    await new Promise((done) => setTimeout(done, 500));
    const before = await treeCpuMs(pid);
    const idleMs = 3000;
    await new Promise((done) => setTimeout(done, idleMs));
    const idle = (await treeCpuMs(pid)) - before;
    child.stdin?.write("\x04");
    return [
      {
        name: "chat: Enter to first streamed character",
        value: round(median(latencies), 1),
        unit: "ms",
        note: `median of ${TURNS} turns beyond the mock's ${MOCK_LATENCY_MS} ms; goal < 50 ms; includes journaling user.input and model.started (fsync)`,
      },
      {
        name: "chat: Enter to the request at the model",
        value: round(median(toRequest), 1),
        unit: "ms",
        note: "the part spent before the request: the turn's engine opening and verifying the journal, appends",
      },
      {
        name: "chat: idle CPU",
        value: round((idle / idleMs) * 100, 2),
        unit: "%",
        note: `of one core over ${idleMs / 1000} s with nothing happening; goal ~0`,
      },
    ];
  } finally {
    child?.kill("SIGKILL");
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
