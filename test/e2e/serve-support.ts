import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, childEnv, tempDir } from "./helpers.js";

/** One JSON-RPC message as it came off the wire (the raw line kept, for byte comparisons). */
export interface WireMessage {
  line: string;
  json: {
    id?: number | string | null;
    method?: string;
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: Record<string, unknown> };
    params?: Record<string, unknown>;
  };
}

/** A config file for the server (HARNESS_CONFIG), never the user's own. */
export async function serverConfig(config: Record<string, unknown> = {}): Promise<string> {
  const path = join(await tempDir("harness-serve-config-"), "config.json");
  await writeFile(path, JSON.stringify(config));
  return path;
}

export function serverEnv(config: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...childEnv(), HARNESS_CONFIG: config, ...extra };
}

/** `harness serve --stdio` driven with raw lines. */
export class StdioServer {
  readonly child: ChildProcess;
  readonly messages: WireMessage[] = [];
  stderr = "";
  #buffer = "";
  #waiters: { test: (m: WireMessage) => boolean; resolve: (m: WireMessage) => void }[] = [];
  #nextId = 1;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(env: NodeJS.ProcessEnv, args: string[] = []) {
    this.child = spawn(process.execPath, [BIN, "serve", "--stdio", ...args], {
      env,
      // Not the test runner's directory: the one serve starts in is served when it holds sessions.
      cwd: mkdtempSync(join(tmpdir(), "harness-serve-cwd-")),
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      this.#buffer += chunk;
      for (let at = this.#buffer.indexOf("\n"); at !== -1; at = this.#buffer.indexOf("\n")) {
        const line = this.#buffer.slice(0, at);
        this.#buffer = this.#buffer.slice(at + 1);
        const message = { line, json: JSON.parse(line) as WireMessage["json"] };
        this.messages.push(message);
        this.#waiters = this.#waiters.filter((waiter) => {
          if (!waiter.test(message)) return true;
          waiter.resolve(message);
          return false;
        });
      }
    });
    this.child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) =>
      this.child.on("close", (code, signal) => resolve({ code, signal })),
    );
  }

  send(line: string): void {
    this.child.stdin?.write(`${line}\n`);
  }

  /** Send a request; resolves with its response. */
  async call(method: string, params: Record<string, unknown> = {}): Promise<WireMessage["json"]> {
    const id = this.#nextId++;
    const response = this.waitFor((m) => m.json.id === id);
    this.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return (await response).json;
  }

  /** The first message (already received or coming) that passes `test`. */
  waitFor(test: (m: WireMessage) => boolean, timeoutMs = 20_000): Promise<WireMessage> {
    const found = this.messages.find(test);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `timed out; got:\n${this.messages.map((m) => m.line.slice(0, 200)).join("\n")}\nstderr: ${this.stderr}`,
            ),
          ),
        timeoutMs,
      );
      this.#waiters.push({
        test,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  notifications(session: string, method?: string): WireMessage[] {
    return this.messages.filter(
      (m) =>
        m.json.method !== undefined &&
        m.json.params?.session === session &&
        (method === undefined || m.json.method === method),
    );
  }

  async close(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin?.end();
    return this.exited;
  }
}

/**
 * `harness serve --http 127.0.0.1:0 --json`: resolves once it prints its URL (and the viewer's,
 * with its token). It runs in `cwd`, by default an empty directory: the one it starts in is
 * served when it holds harness state, and the test runner's may.
 */
export async function startHttpServer(
  env: NodeJS.ProcessEnv,
  args: string[] = [],
  options: { cwd?: string } = {},
): Promise<{
  child: ChildProcess;
  url: string;
  viewer: string;
  stderr: () => string;
  exited: Promise<number | null>;
}> {
  const child = spawn(process.execPath, [BIN, "serve", "--http", "127.0.0.1:0", "--json", ...args], {
    env,
    cwd: options.cwd ?? mkdtempSync(join(tmpdir(), "harness-serve-cwd-")),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const { url, viewer } = await new Promise<{ url: string; viewer: string }>((resolve, reject) => {
    let out = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) resolve(JSON.parse(line) as { url: string; viewer: string });
    });
    void exited.then(() => reject(new Error(`server exited: ${stderr}`)));
  });
  return { child, url, viewer, stderr: () => stderr, exited };
}

/** POST /rpc with a token: the HTTP status and the parsed body. */
export async function rpc(
  url: string,
  token: string | undefined,
  method: string,
  params: Record<string, unknown> = {},
  id: number | string = 1,
): Promise<{ status: number; body: WireMessage["json"] }> {
  const response = await fetch(`${url}/rpc`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? {} : (JSON.parse(text) as WireMessage["json"]) };
}

/** One SSE event as sent: its id (if any) and its data line, plus the raw text. */
export interface SseEvent {
  id?: string;
  data: string;
  raw: string;
}

/** GET /events as a raw stream of events; `close()` drops the connection. */
export function openEvents(
  url: string,
  token: string,
  session: string,
  headers: Record<string, string> = {},
  query = "",
): {
  events: SseEvent[];
  status: Promise<number>;
  waitFor(test: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
} {
  const events: SseEvent[] = [];
  let waiters: { test: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void }[] = [];
  let resolveStatus!: (status: number) => void;
  const status = new Promise<number>((resolve) => {
    resolveStatus = resolve;
  });
  const target = new URL(`${url}/events?session=${encodeURIComponent(session)}${query}`);
  const req = httpRequest(target, { headers: { authorization: `Bearer ${token}`, ...headers } }, (res) => {
    resolveStatus(res.statusCode ?? 0);
    let buffer = "";
    res.setEncoding("utf8").on("data", (chunk: string) => {
      buffer += chunk;
      for (let at = buffer.indexOf("\n\n"); at !== -1; at = buffer.indexOf("\n\n")) {
        const raw = buffer.slice(0, at + 2);
        buffer = buffer.slice(at + 2);
        if (raw.startsWith(":")) continue;
        const id = /^id: (.*)$/m.exec(raw)?.[1];
        const data = /^data: (.*)$/m.exec(raw)?.[1] ?? "";
        const event: SseEvent = { ...(id !== undefined ? { id } : {}), data, raw };
        events.push(event);
        waiters = waiters.filter((waiter) => {
          if (!waiter.test(event)) return true;
          waiter.resolve(event);
          return false;
        });
      }
    });
  });
  req.on("error", () => {});
  req.end();
  return {
    events,
    status,
    waitFor(test, timeoutMs = 20_000) {
      const found = events.find(test);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(new Error(`timed out; events:\n${events.map((e) => e.data.slice(0, 160)).join("\n")}`)),
          timeoutMs,
        );
        waiters.push({
          test,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e);
          },
        });
      });
    },
    close: () => req.destroy(),
  };
}

export function methodOf(event: SseEvent): string | undefined {
  return (JSON.parse(event.data) as { method?: string }).method;
}

/** The kind of an item/started or item/completed notification's item. */
export function itemKind(message: WireMessage): string | undefined {
  return (message.json.params?.item as { kind?: string } | undefined)?.kind;
}
