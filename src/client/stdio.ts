import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { encodeLine, LineDecoder, RpcError, response as responseSchema } from "../api/index.js";
import { createClient, type HarnessClient } from "./client.js";
import { connectionClosed, connectionFailed, protocolViolation, type Transport } from "./transport.js";

/**
 * The client over a pair of byte streams carrying one JSON-RPC message per line: the server's
 * output is read here, requests are written to its input. Responses are matched to requests by
 * id; notifications go to the session iterators and the connection-wide listeners.
 */
class StreamTransport implements Transport {
  #nextId = 1;
  #pending = new Map<
    number,
    { method: string; resolve: (v: unknown) => void; reject: (e: unknown) => void }
  >();
  #sessions = new Map<string, Set<(raw: unknown) => void>>();
  #listeners: ((raw: unknown) => void)[] = [];
  #closed: RpcError | undefined;
  #decoder = new LineDecoder();
  #onData = (chunk: Buffer | string) => this.#receive(chunk);
  #onEnd = () => this.#end(connectionClosed("the server closed the connection"));
  #onError = (error: Error) => this.#end(connectionClosed(`the connection failed: ${error.message}`));

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly output: NodeJS.WritableStream,
    private readonly onClose: () => Promise<void> = async () => {},
  ) {
    input.on("data", this.#onData);
    input.on("end", this.#onEnd);
    input.on("error", this.#onError);
    output.on("error", this.#onError);
  }

  /** Ends the connection with `error`: every pending request and every iterator learns why. */
  end(error: RpcError): void {
    this.#end(error);
  }

  call(method: string, params: unknown): Promise<unknown> {
    if (this.#closed) return Promise.reject(this.#closed);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { method, resolve, reject });
      this.output.write(encodeLine({ jsonrpc: "2.0", id, method, params }));
    });
  }

  async events(
    session: string,
    fromSeq: number,
    signal: AbortSignal,
    push: (raw: unknown) => void,
  ): Promise<void> {
    const listeners = this.#sessions.get(session) ?? new Set();
    this.#sessions.set(session, listeners);
    listeners.add(push);
    try {
      await this.call("session/subscribe", { session, from_seq: fromSeq });
      await new Promise<void>((resolve, reject) => {
        const finish = () => {
          signal.removeEventListener("abort", finish);
          this.#waitClosed.delete(finish);
          if (this.#closed && !signal.aborted) reject(this.#closed);
          else resolve();
        };
        if (signal.aborted || this.#closed) return finish();
        signal.addEventListener("abort", finish, { once: true });
        this.#waitClosed.add(finish);
      });
    } finally {
      listeners.delete(push);
      if (listeners.size === 0) this.#sessions.delete(session);
    }
  }

  #waitClosed = new Set<() => void>();

  onNotification(listener: (raw: unknown) => void): void {
    this.#listeners.push(listener);
  }

  async close(): Promise<void> {
    this.#end(connectionClosed("the client closed the connection"));
    this.output.end();
    await this.onClose();
  }

  #receive(chunk: Buffer | string): void {
    for (const line of this.#decoder.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk)) {
      if (!line.ok) {
        this.#broadcast(protocolViolation(`the server sent a line that is not JSON (${line.error})`));
        continue;
      }
      this.#dispatch(line.value);
    }
  }

  #dispatch(value: unknown): void {
    if (typeof value === "object" && value !== null && "id" in value) {
      const parsed = responseSchema.safeParse(value);
      const id = (value as { id: unknown }).id;
      const pending = typeof id === "number" ? this.#pending.get(id) : undefined;
      if (!parsed.success) {
        const error = protocolViolation("the server sent a response that is not JSON-RPC");
        if (pending) {
          this.#pending.delete(id as number);
          pending.reject(error);
        } else this.#broadcast(error);
        return;
      }
      if (!pending) return; // an answer to nothing we asked: ignored
      this.#pending.delete(id as number);
      const message = parsed.data;
      if ("error" in message)
        pending.reject(new RpcError(message.error.code, message.error.message, message.error.data));
      else pending.resolve(message.result);
      return;
    }
    for (const listener of this.#listeners) listener(value);
    const session = sessionOf(value);
    if (session === undefined) {
      this.#broadcast(value);
      return;
    }
    for (const push of this.#sessions.get(session) ?? []) push(value);
  }

  /** Something no session can be told apart by goes to every iterator (which will refuse it). */
  #broadcast(value: unknown): void {
    for (const listeners of this.#sessions.values()) for (const push of listeners) push(value);
  }

  #end(error: RpcError): void {
    if (this.#closed) return;
    this.#closed = error;
    this.input.off("data", this.#onData);
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    for (const finish of [...this.#waitClosed]) finish();
  }
}

function sessionOf(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const params = (value as { params?: unknown }).params;
  if (typeof params !== "object" || params === null) return undefined;
  const session = (params as { session?: unknown }).session;
  return typeof session === "string" ? session : undefined;
}

/** A client over streams you already have: `input` carries the server's output, `output` goes to its input. */
export function connectStreams(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): HarnessClient {
  return createClient(new StreamTransport(input, output));
}

export interface StdioOptions {
  /** The whole command line of the server; default: this package's `harness serve --stdio`, run by this node. */
  command?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/** This package's CLI, next to this module in dist/. */
function defaultCommand(): string[] {
  return [process.execPath, fileURLToPath(new URL("../cli/bin.js", import.meta.url)), "serve", "--stdio"];
}

const STDERR_TAIL = 4096;

/**
 * Spawns `harness serve --stdio` and connects to it, then `initialize`s. `close()` asks the server
 * to shut down (sessions brought to a safe point), ends its input and waits for it to exit.
 */
export async function connectStdio(opts: StdioOptions = {}): Promise<HarnessClient> {
  const [program, ...args] = opts.command ?? defaultCommand();
  if (program === undefined) throw new TypeError("connectStdio: command is empty");
  const child: ChildProcess = spawn(program, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (text: string) => {
    stderr = (stderr + text).slice(-STDERR_TAIL);
  });
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const spawnFailed = new Promise<never>((_, reject) =>
    child.once("error", (error) => reject(connectionFailed(`could not start ${program}: ${error.message}`))),
  );
  spawnFailed.catch(() => {});
  if (!child.stdin || !child.stdout) throw connectionFailed("the server's pipes are missing");
  const stdin = child.stdin;
  const transport = new StreamTransport(child.stdout, stdin, async () => {
    const timer = setTimeout(() => child.kill("SIGTERM"), 10_000);
    await exited;
    clearTimeout(timer);
  });
  child.once("exit", (code, signal) => {
    const why = signal ? `signal ${signal}` : `exit code ${code}`;
    const tail = stderr.trim();
    transport.end(connectionClosed(`the server exited (${why})${tail ? `: ${tail.slice(-500)}` : ""}`));
  });
  const client = createClient(transport);
  const close = client.close.bind(client);
  const shutdownThenClose = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      await Promise.race([client.shutdown().catch(() => {}), exited]);
    }
    await close();
  };
  try {
    await Promise.race([
      client.initialize({ client: { name: "harness/client", version: "1" } }),
      spawnFailed,
    ]);
  } catch (error) {
    child.kill("SIGTERM");
    throw error;
  }
  return { ...client, close: shutdownThenClose };
}
