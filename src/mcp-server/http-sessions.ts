import { randomUUID } from "node:crypto";
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type RequestId,
  type Server,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { SessionLimits } from "./http-limits.js";

/** One 2025-era client session: its SDK server (bound to its initialize) and what ends it. */
export interface ClientSession {
  server: Server;
  /** The client left: end what was kept for it (its calls, its questions, its journal session). */
  close(): Promise<void>;
}

interface Entry {
  transport: WebStandardStreamableHTTPServerTransport;
  client: ClientSession;
  lastUsed: number;
  /** Requests whose response is still being sent (an open stream keeps the session alive). */
  active: number;
  closing: boolean;
}

/** A response and the call that says it has been sent in full (or dropped). */
export interface Exchange {
  response: Response;
  done(): void;
}

/**
 * Sessionful Streamable HTTP for 2025-era clients (the `Mcp-Session-Id` the SDK's transport
 * issues at initialize): one SDK server per client session for its whole life, so what the
 * client declared at initialize (elicitation) holds for its later requests, a
 * `notifications/cancelled` reaches the server that runs the request it names, and
 * elicitation requests travel back on the call's own stream. Sessions are bounded in count and
 * ended when idle, by DELETE, or when the server stops.
 */
export class HttpSessions {
  private readonly open = new Map<string, Entry>();
  private starting = 0;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly create: () => ClientSession,
    private readonly limits: SessionLimits,
    private readonly onError: (error: Error) => void,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.min(limits.idleMs / 2, 60_000)));
    this.sweeper.unref();
  }

  /** How many client sessions are open. */
  get size(): number {
    return this.open.size;
  }

  /** An initialize request without a session: a new client session, if there is room. */
  async initialize(request: Request): Promise<Exchange> {
    this.sweep();
    if (this.open.size + this.starting >= this.limits.max) {
      return {
        response: jsonRpcError(
          503,
          `too many client sessions are open (${this.limits.max}); end one (HTTP DELETE with its Mcp-Session-Id) or try again later`,
        ),
        done: () => undefined,
      };
    }
    this.starting += 1;
    const client = this.create();
    let entry: Entry | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        entry = { transport, client, lastUsed: Date.now(), active: 1, closing: false };
        this.open.set(id, entry);
      },
      // DELETE is answered once the session has ended (its calls stopped, its journal closed).
      onsessionclosed: (id) => this.end(id),
    });
    try {
      await client.server.connect(transport);
      closeCancelledStreams(transport);
      client.server.onclose = () => {
        if (transport.sessionId !== undefined) void this.end(transport.sessionId);
      };
      const response = await transport.handleRequest(request);
      if (entry === undefined) {
        // The initialize was refused (malformed, a bad version): nothing is kept.
        await client.close().catch(() => undefined);
        await transport.close().catch(() => undefined);
        return { response, done: () => undefined };
      }
      return { response, done: this.doneFor(entry) };
    } catch (error) {
      // Nothing half-made is kept: a session whose initialize failed is ended at once.
      if (transport.sessionId !== undefined) await this.end(transport.sessionId);
      else await client.close().catch(() => undefined);
      throw error;
    } finally {
      this.starting -= 1;
    }
  }

  /** A request in a session; undefined when the session is unknown (ended or never issued). */
  async request(id: string, request: Request): Promise<Exchange | undefined> {
    const entry = this.open.get(id);
    if (!entry || entry.closing) return undefined;
    entry.active += 1;
    entry.lastUsed = Date.now();
    try {
      return { response: await entry.transport.handleRequest(request), done: this.doneFor(entry) };
    } catch (error) {
      this.doneFor(entry)();
      throw error;
    }
  }

  /** Ends every session (the server stops). */
  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.open.keys()].map((id) => this.end(id)));
  }

  private doneFor(entry: Entry): () => void {
    let once = false;
    return () => {
      if (once) return;
      once = true;
      entry.active -= 1;
      entry.lastUsed = Date.now();
    };
  }

  /** Ends the sessions nobody has used for the idle time. */
  private sweep(): void {
    const now = Date.now();
    for (const [id, entry] of this.open) {
      if (entry.active === 0 && now - entry.lastUsed >= this.limits.idleMs) void this.end(id);
    }
  }

  private async end(id: string): Promise<void> {
    const entry = this.open.get(id);
    if (!entry || entry.closing) return;
    entry.closing = true;
    try {
      await entry.client.close();
      await entry.transport.close();
    } catch (error) {
      this.onError(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.open.delete(id);
    }
  }
}

/**
 * A request the client cancelled gets no response (the protocol forbids one), so the SDK's
 * transport would keep its event stream open, sending keep-alives, until the client drops it: a
 * client that keeps its connection (the 1.x SDK does) would hold one open stream per cancelled
 * call for its whole life. The stream is closed once the cancellation is delivered or, when
 * other requests of the same POST (a batch) still answer on it, once the last of them is
 * answered. A cancellation naming a request this client did not send, or one already answered,
 * closes nothing.
 */
export function closeCancelledStreams(
  transport: Pick<WebStandardStreamableHTTPServerTransport, "onmessage" | "send" | "closeSSEStream">,
): void {
  // Requests still waiting for their response, each with the POST that carried it.
  const inFlight = new Map<RequestId, object>();
  // POSTs with a cancelled request whose stream waits for the other requests' answers.
  const cancelledIn = new WeakSet<object>();
  const sharesPost = (post: object) => [...inFlight.values()].includes(post);
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (isJSONRPCRequest(message)) inFlight.set(message.id, extra?.request ?? {});
    deliver?.(message, extra);
    if (!isJSONRPCNotification(message) || message.method !== "notifications/cancelled") return;
    const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
    if ((typeof id !== "string" && typeof id !== "number") || !inFlight.has(id)) return;
    const post = inFlight.get(id)!;
    inFlight.delete(id);
    if (sharesPost(post)) cancelledIn.add(post);
    else transport.closeSSEStream(id);
  };
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    const answered =
      (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined
        ? message.id
        : undefined;
    const post = answered === undefined ? undefined : inFlight.get(answered);
    if (answered !== undefined) inFlight.delete(answered);
    await send(message, options);
    if (answered !== undefined && post !== undefined && cancelledIn.has(post) && !sharesPost(post)) {
      transport.closeSSEStream(answered);
    }
  };
}

/** A JSON-RPC error answer with an HTTP status, as the SDK's transports answer. */
export function jsonRpcError(status: number, message: string, code = -32000): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), {
    status,
    headers: { "content-type": "application/json" },
  });
}
