import { type CallToolResult, Client, type Transport } from "@modelcontextprotocol/client";
import type { StreamSummary } from "../sandbox/capture.js";
import type { ProcessFacts } from "../sandbox/executor.js";
import { callDeadlineMs, isStdioDefinition, type McpServerDefinition } from "./config.js";
import { callFailure, exitText, McpCallError, McpStartError, startFailure } from "./errors.js";
import {
  connectionLost,
  createHttpTransport,
  mayResume,
  type ResumeWatch,
  suggestsSseFallback,
} from "./http-transport.js";
import { NetworkFailureWatch, offlineReason, packageRunner } from "./offline-start.js";
import { launchStdioServer, ProcessTransport, type StdioHost } from "./process-transport.js";
import type { McpToolInfo } from "./tool-info.js";
import {
  listBounded,
  MAX_LIST_PAGES,
  MAX_SURFACE_BYTES_PER_SERVER,
  MAX_TOOLS_PER_SERVER,
  McpListingRefused,
} from "./tool-listing.js";

export { McpCallError, type McpCallErrorKind, type McpCallOutcome, McpStartError } from "./errors.js";
export type { McpToolInfo } from "./tool-info.js";

/**
 * One MCP server as harness uses it: started (bounded by startup_timeout_ms), its tools listed,
 * its tools called with a per-call timeout and cancellation. The failure rules:
 *
 * - When the server exits or the connection drops, every in-flight call fails at once as
 *   `disconnected` with outcome `unknown` (the request may have reached the server).
 * - The next call after a disconnect makes one reconnect attempt, bounded by the startup
 *   timeout; if that fails the connection is `failed` and calls fail as `not_connected` without
 *   being sent, until `start()` is called again.
 * - A failed call is never sent again: retrying is the caller's decision, made with the outcome.
 */

/** The server's CallToolResult as received (an `isError` result is a result, not an exception). */
export type McpCallResult = CallToolResult;

export type McpConnectionState = "starting" | "ready" | "failed" | "closed";

export interface McpCallOptions {
  signal?: AbortSignal;
  /**
   * How long the call may go without an answer or a progress notification; default the
   * definition's tool_timeout_ms. Each progress notification the server sends for the call starts
   * this wait again, up to the call's maximum total (callDeadlineMs).
   */
  timeoutMs?: number;
  /** The call's W3C traceparent: sent as `_meta.traceparent`, so the server can join the session's trace. */
  traceparent?: string;
}

/** What happened to the connection, for progress display and the journal. */
export type McpConnectionEvent =
  | {
      type: "started";
      starts: number;
      transport: "stdio" | "streamable-http" | "sse";
      facts?: ProcessFacts;
      pid?: number;
    }
  | { type: "disconnected"; stderr?: StreamSummary }
  | { type: "reconnecting" };

export interface McpConnectionOptions {
  /** The server's name in the config (`mcp_servers.NAME`). */
  name: string;
  definition: McpServerDefinition;
  /** How stdio servers are started; required for a stdio definition. */
  stdio?: StdioHost;
  /** Where bearer_token_env is read; default process.env. */
  environment?: Readonly<Record<string, string | undefined>>;
  /** harness's name and version as the server sees them. */
  clientInfo?: { name: string; version: string };
  onEvent?: (event: McpConnectionEvent) => void;
  /**
   * Run immediately before every start (the first, a restart, a reconnect): throwing refuses that
   * start with the error (an McpStartError is passed on as it is) and nothing is launched.
   */
  beforeStart?: () => void | Promise<void>;
  /**
   * What to tell the user when a package runner's server could not download its package (see
   * offline-start.ts): the fix, as commands that work for this server. Default: the config key.
   */
  offlineFix?: (runner: { runner: string; pkg: string }) => string;
}

/** How long a failed handshake waits for the server's exit to be reported. */
const EXIT_GRACE_MS = 250;

interface Live {
  client: Client;
  transport: Transport;
  /** Stops what is left of the server (stdio: its tree) and returns its stderr. */
  stopped: () => Promise<StreamSummary | undefined>;
  /** The connection ended (possibly before start() adopted it). */
  dropped: boolean;
  /** Announced once start() adopted the connection (a start cancelled by close() announces nothing). */
  started?: McpConnectionEvent;
}

export class McpConnection {
  readonly name: string;
  readonly definition: McpServerDefinition;
  #state: McpConnectionState = "closed";
  #toolsChanged = false;
  #live: Live | undefined;
  /** Set by a disconnect: the next call may reconnect once. */
  #mayReconnect = false;
  #reconnecting: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #starting: Promise<void> | undefined;
  #starts = 0;
  #lastStderr: StreamSummary | undefined;

  constructor(private readonly options: McpConnectionOptions) {
    this.name = options.name;
    this.definition = options.definition;
  }

  get state(): McpConnectionState {
    return this.#state;
  }

  /**
   * The server said its tool list changed since the last listTools, or it was restarted since
   * (a restarted server may offer other tools).
   */
  get toolsChanged(): boolean {
    return this.#toolsChanged;
  }

  /** How many times the server was started (or connected to) by this connection. */
  get starts(): number {
    return this.#starts;
  }

  /** The stderr of the last server process that ended (stdio only). */
  get lastStderr(): StreamSummary | undefined {
    return this.#lastStderr;
  }

  /**
   * Start (or restart) the server and complete the MCP handshake within startup_timeout_ms.
   * Rejects with McpStartError (the process is gone by then); the state is then `failed`.
   */
  start(): Promise<void> {
    if (this.#state === "ready") return Promise.resolve();
    this.#starting ??= (async () => {
      this.#state = "starting";
      try {
        await this.#stopping;
        const live = await this.#connect();
        if (this.#closedMeanwhile()) {
          // close() was called while the server started: it must not be left running.
          await this.#shutdown(live);
          throw startFailure(
            this.name,
            "handshake",
            new Error("the connection was closed while starting"),
            undefined,
          );
        }
        this.#live = live;
        this.#state = "ready";
        // A restarted server may offer other tools than the one that ended: list them again.
        if (this.#starts > 1) this.#toolsChanged = true;
        if (live.started !== undefined) this.options.onEvent?.(live.started);
        // A server that died between its handshake and now is a disconnect like any other.
        if (live.dropped) this.#disconnected(live);
      } catch (error) {
        if (!this.#closedMeanwhile()) this.#state = "failed";
        throw error;
      } finally {
        this.#starting = undefined;
      }
    })();
    return this.#starting;
  }

  /**
   * Every tool the server lists, page by page within the bounds of tool-listing.ts: past one, the
   * whole listing is refused (McpListingRefused). `maxBytes` lowers the byte bound (what is left
   * of every server's together); `signal` abandons the listing (harness is stopping).
   */
  async listTools(options: { signal?: AbortSignal; maxBytes?: number } = {}): Promise<McpToolInfo[]> {
    const live = await this.#ready();
    // Cleared before asking: a change announced while the list is in flight sets it again.
    this.#toolsChanged = false;
    // A server without tools is not asked (the SDK would answer for it, with a line on stdout).
    if (live.client.getServerCapabilities()?.tools === undefined) return [];
    const maxBytes = Math.min(MAX_SURFACE_BYTES_PER_SERVER, options.maxBytes ?? MAX_SURFACE_BYTES_PER_SERVER);
    try {
      const { tools } = await listBounded(
        this.name,
        (cursor, signal, timeout) =>
          live.client.request(
            { method: "tools/list", ...(cursor !== undefined ? { params: { cursor } } : {}) },
            { signal, timeout },
          ),
        {
          maxTools: MAX_TOOLS_PER_SERVER,
          maxBytes,
          sharedBytes: maxBytes < MAX_SURFACE_BYTES_PER_SERVER,
          maxPages: MAX_LIST_PAGES,
          deadlineMs: this.definition.startup_timeout_ms,
        },
        options.signal,
      );
      return tools;
    } catch (error) {
      if (error instanceof McpListingRefused) throw error;
      throw callFailure(this.name, error, options.signal);
    }
  }

  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: McpCallOptions = {},
  ): Promise<McpCallResult> {
    if (options.signal?.aborted) {
      throw new McpCallError("cancelled", "not_sent", `the call to ${name} was cancelled before it was sent`);
    }
    const live = await this.#ready();
    if (options.signal?.aborted) {
      throw new McpCallError("cancelled", "not_sent", `the call to ${name} was cancelled before it was sent`);
    }
    const timeout = options.timeoutMs ?? this.definition.tool_timeout_ms;
    try {
      // A progress token goes with every call; the server's progress keeps a long call alive.
      return (await live.client.callTool(
        {
          name,
          arguments: args,
          ...(options.traceparent !== undefined ? { _meta: { traceparent: options.traceparent } } : {}),
        },
        {
          timeout,
          onprogress: () => undefined,
          resetTimeoutOnProgress: true,
          maxTotalTimeout: Math.max(timeout, callDeadlineMs(this.definition)),
          ...(options.signal !== undefined ? { signal: options.signal } : {}),
        },
      )) as McpCallResult;
    } catch (error) {
      throw callFailure(this.name, error, options.signal);
    }
  }

  /** Stop the server (its whole process tree for stdio). Idempotent; the connection can start again. */
  async close(): Promise<void> {
    this.#state = "closed";
    this.#mayReconnect = false;
    const live = this.#live;
    this.#live = undefined;
    if (live !== undefined) await this.#shutdown(live);
    // A start in progress stops what it started itself; wait for it, so nothing outlives close.
    await this.#starting?.catch(() => undefined);
    await this.#stopping;
  }

  /** Whether close() ran while a start was awaiting (the compiler cannot see it change). */
  #closedMeanwhile(): boolean {
    return this.#state === "closed";
  }

  /** The live client, reconnecting once after a disconnect; otherwise McpCallError not_connected. */
  async #ready(): Promise<Live> {
    // A call made while the server is (re)starting waits for that start.
    if (this.#starting !== undefined) await this.#starting.catch(() => undefined);
    if (this.#state === "ready" && this.#live !== undefined) return this.#live;
    if (this.#mayReconnect) {
      this.#reconnecting ??= (async () => {
        this.#mayReconnect = false;
        await this.#stopping;
        this.options.onEvent?.({ type: "reconnecting" });
        await this.start();
      })().finally(() => {
        this.#reconnecting = undefined;
      });
    }
    if (this.#reconnecting !== undefined) {
      try {
        await this.#reconnecting;
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new McpCallError(
          "not_connected",
          "not_sent",
          `reconnecting to MCP server "${this.name}" failed: ${reason}`,
          { cause: error },
        );
      }
      if (this.#live !== undefined && this.#state === "ready") return this.#live;
    }
    throw new McpCallError(
      "not_connected",
      "not_sent",
      `MCP server "${this.name}" is not connected (${this.#state})`,
    );
  }

  async #connect(): Promise<Live> {
    const definition = this.definition;
    try {
      await this.options.beforeStart?.();
    } catch (error) {
      throw error instanceof McpStartError ? error : startFailure(this.name, "spawn", error, undefined);
    }
    const deadline = AbortSignal.timeout(definition.startup_timeout_ms);
    if (isStdioDefinition(definition)) {
      const host = this.options.stdio;
      if (host === undefined) throw new TypeError(`no stdio host for MCP server "${this.name}"`);
      let launched: Awaited<ReturnType<typeof launchStdioServer>>;
      try {
        launched = await launchStdioServer(definition, host, this.name);
      } catch (error) {
        throw startFailure(this.name, "spawn", error, undefined);
      }
      const { process: service, facts, sandboxed } = launched;
      try {
        const { pid, pgid, bootId, startTicks } = service;
        await host.onSpawn?.({ pid, pgid, bootId, startTicks, ...facts, sandboxed }, this.name);
      } catch (error) {
        await service.stop();
        throw startFailure(this.name, "spawn", error, undefined);
      }
      const transport = new ProcessTransport(launched.process);
      const live = await this.#handshake(transport, deadline, async () => transport.stopped());
      live.started = {
        type: "started",
        starts: this.#starts,
        transport: "stdio",
        facts: launched.facts,
        pid: launched.process.pid,
      };
      return live;
    }
    const environment = this.options.environment ?? process.env;
    const kinds =
      definition.transport === "auto" ? (["streamable-http", "sse"] as const) : [definition.transport];
    for (const [index, kind] of kinds.entries()) {
      let transport: Transport;
      const watch: ResumeWatch = { scheduled: 0 };
      try {
        transport = createHttpTransport(definition, kind, environment, watch);
      } catch (error) {
        throw startFailure(this.name, "spawn", error, undefined);
      }
      try {
        const live = await this.#handshake(transport, deadline, async () => undefined, watch);
        live.started = { type: "started", starts: this.#starts, transport: kind };
        return live;
      } catch (error) {
        const last = index === kinds.length - 1;
        if (last || !(error instanceof McpStartError) || !suggestsSseFallback(error.cause)) throw error;
      }
    }
    throw new TypeError("unreachable: no transport to try");
  }

  /**
   * For a server a package runner starts (`npx -y pkg`): its stderr watched during the handshake,
   * so a download that fails for want of network ends the start at once (a runner may retry for
   * minutes), with the reason and the fix instead of a timeout.
   */
  #offlineWatch(transport: Transport):
    | {
        signal: AbortSignal;
        stop(): void;
        evidence(stderr: StreamSummary | undefined): string | undefined;
        message(evidence: string): string;
      }
    | undefined {
    const definition = this.definition;
    if (!(transport instanceof ProcessTransport) || !isStdioDefinition(definition)) return undefined;
    const runner = packageRunner(definition);
    if (runner === undefined) return undefined;
    const watch = new NetworkFailureWatch();
    const controller = new AbortController();
    const unsubscribe = transport.process.onStderr((bytes) => {
      if (watch.push(bytes) !== undefined) controller.abort();
    });
    return {
      signal: controller.signal,
      stop: unsubscribe,
      // The live watch, or what the stderr kept says (a runner that gave up and exited).
      evidence: (stderr) =>
        watch.seen ??
        (stderr === undefined
          ? undefined
          : new NetworkFailureWatch().push(Buffer.from(`${stderr.head}\n${stderr.tail}`))),
      message: (evidence) =>
        `${offlineReason(definition, runner, evidence)}.\n${
          this.options.offlineFix?.(runner) ??
          `Fix: let it reach the network ("network": true in mcp_servers.${this.name}), or install ${runner.pkg} and make the server's command the program it installs`
        }`,
    };
  }

  /** Connect a fresh client over `transport` within the deadline; on failure stop what started. */
  async #handshake(
    transport: Transport,
    deadline: AbortSignal,
    stopped: () => Promise<StreamSummary | undefined>,
    watch?: ResumeWatch,
  ): Promise<Live> {
    const client = new Client(this.options.clientInfo ?? { name: "harness", version: "0" }, {
      capabilities: {},
    });
    client.setNotificationHandler("notifications/tools/list_changed", () => {
      this.#toolsChanged = true;
    });
    this.#starts += 1;
    const live: Live = { client, transport, stopped, dropped: false };
    const offline = this.#offlineWatch(transport);
    try {
      await client.connect(transport, {
        signal: offline ? AbortSignal.any([deadline, offline.signal]) : deadline,
        timeout: this.definition.startup_timeout_ms,
      });
    } catch (error) {
      // An exit during the handshake is the real reason, not "connection closed". Its stdout may
      // close a moment before the exit is reported: give the exit that moment, before we kill it.
      let exited = false;
      if (transport instanceof ProcessTransport) {
        await Promise.race([
          transport.process.exited,
          new Promise((resolve) => setTimeout(resolve, EXIT_GRACE_MS)),
        ]);
        exited = transport.process.hasExited;
      }
      await client.close().catch(() => undefined);
      const stderr = await stopped();
      offline?.stop();
      if (stderr !== undefined) this.#lastStderr = stderr;
      const unreachable = offline?.evidence(stderr);
      if (offline !== undefined && unreachable !== undefined)
        throw startFailure(this.name, "offline", new Error(offline.message(unreachable)), stderr);
      const reason = exited
        ? new Error(exitText(await (transport as ProcessTransport).process.exited))
        : error;
      throw startFailure(this.name, deadline.aborted ? "timeout" : "handshake", reason, stderr);
    }
    offline?.stop();
    // Set after connect: a failed handshake is reported by start, not as a disconnect.
    client.onclose = () => {
      live.dropped = true;
      this.#disconnected(live);
    };
    // HTTP has no process to watch: a broken stream or a refused request is the drop, unless the
    // SDK resumes the stream (it schedules that right after reporting the break). Closing the
    // client fails every call in flight at once instead of leaving them to their timeouts.
    client.onerror = (error) => {
      if (!connectionLost(error)) return;
      if (watch !== undefined && mayResume(error)) {
        const before = watch.scheduled;
        queueMicrotask(() => {
          if (watch.scheduled === before) void client.close().catch(() => undefined);
        });
        return;
      }
      void client.close().catch(() => undefined);
    };
    if (transport instanceof ProcessTransport && transport.process.hasExited) live.dropped = true;
    return live;
  }

  #disconnected(live: Live): void {
    if (this.#live !== live) return;
    this.#live = undefined;
    if (this.#state === "closed") return;
    this.#state = "failed";
    this.#mayReconnect = true;
    // A reconnect waits for the old tree to be gone: never two servers at once.
    this.#stopping = live.stopped().then((stderr) => {
      if (stderr !== undefined) this.#lastStderr = stderr;
      this.options.onEvent?.({ type: "disconnected", ...(stderr !== undefined ? { stderr } : {}) });
    });
  }

  async #shutdown(live: Live): Promise<void> {
    await live.client.close().catch(() => undefined);
    if (live.transport instanceof ProcessTransport) this.#lastStderr = await live.transport.stopped();
  }
}
