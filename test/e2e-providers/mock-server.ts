import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import {
  DIALECT_BASE_PATHS,
  DIALECT_PATHS,
  type Dialect,
  type MockReply,
  readRequest,
  type Turn,
  type WireRequest,
  writeReply,
} from "./wire.js";

/**
 * A loopback model server that plays a scripted conversation in one wire dialect. Every answer
 * is computed from the request it answers (the script reads tool results out of the body), so
 * a client that sends a wrong history gets a wrong, or a refused, next step. Each request is
 * kept, raw and parsed, for the test to inspect.
 */

export interface MockRequest extends WireRequest {
  /** 0-based position among all requests this server received. */
  index: number;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  raw: string;
  body: unknown;
  /** Assistant turns in the history: which step of the conversation is being asked for. */
  step: number;
  /** Earlier requests for the same step (retries and resumes). */
  attempt: number;
}

export type Script = (request: MockRequest) => MockReply | Promise<MockReply>;

export interface MockServer {
  origin: string;
  /** What a client is given as its base URL (`--base-url`). */
  baseUrl: string;
  requests: MockRequest[];
  /** Requests the script could not answer (a wrong history, a malformed body, a wrong path). */
  failures: string[];
  /** Resolves once `count` requests have arrived (with the last of them). */
  waitForRequests(count: number): Promise<MockRequest>;
  close(): Promise<void>;
}

export interface MockServerOptions {
  dialect: Dialect;
  script: Script;
  /** Serve https with this certificate instead of plain http. */
  tls?: { key: Buffer; cert: Buffer };
}

export async function startMockServer(options: MockServerOptions): Promise<MockServer> {
  const { dialect, script } = options;
  const requests: MockRequest[] = [];
  const failures: string[] = [];
  const waiters: { count: number; resolve: (request: MockRequest) => void }[] = [];

  const refuse = (res: ServerResponse, status: number, message: string): void => {
    failures.push(message);
    res
      .writeHead(status, { "content-type": "application/json" })
      .end(JSON.stringify({ error: { message: `mock server: ${message}`, type: "mock_script_error" } }));
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const path = req.url ?? "";
      if (req.method !== "POST" || path !== DIALECT_PATHS[dialect]) {
        refuse(res, 404, `unexpected ${req.method} ${path}`);
        return;
      }
      let request: MockRequest;
      try {
        const body: unknown = JSON.parse(raw);
        const wire = readRequest(dialect, body);
        const step = wire.turns.filter((turn) => turn.role === "assistant").length;
        request = {
          ...wire,
          index: requests.length,
          path,
          headers: req.headers,
          raw,
          body,
          step,
          attempt: requests.filter((earlier) => earlier.step === step).length,
        };
      } catch (error) {
        refuse(res, 400, `unreadable request: ${(error as Error).message}`);
        return;
      }
      requests.push(request);
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(request);
      }
      Promise.resolve()
        .then(() => script(request))
        .then(
          (reply) => answer(res, reply),
          (error: unknown) => refuse(res, 400, `request ${request.index}: ${(error as Error).message}`),
        );
    });
  };
  const server: Server =
    options.tls === undefined ? createServer(handle) : createHttpsServer(options.tls, handle);

  const answer = (res: ServerResponse, reply: MockReply): void => {
    if (reply.kind === "stall") return;
    const wire = writeReply(dialect, reply);
    res.writeHead(wire.status, wire.headers);
    if ("cutAfter" in wire) {
      // Flush the prefix so the client has parsed it, then drop the connection mid-reply.
      res.write(wire.cutAfter, () => setTimeout(() => res.socket?.destroy(), 150));
      return;
    }
    res.end(wire.body);
  };

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `${options.tls === undefined ? "http" : "https"}://127.0.0.1:${port}`;
  return {
    origin,
    baseUrl: `${origin}${DIALECT_BASE_PATHS[dialect]}`,
    requests,
    failures,
    waitForRequests(count) {
      const reached = requests[count - 1];
      if (reached !== undefined) return Promise.resolve(reached);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The tool result paired with a call id, if the request carries one. */
export function resultFor(request: MockRequest, callId: string): Extract<Turn, { role: "tool" }> | undefined {
  return request.turns.find(
    (turn): turn is Extract<Turn, { role: "tool" }> => turn.role === "tool" && turn.callId === callId,
  );
}

/**
 * Every assistant call followed by its results: the ids in request order, each call's result
 * directly after the assistant turn that made it. Returns a description of the first problem.
 */
export function pairingProblem(request: MockRequest): string | undefined {
  const turns = request.turns;
  for (let i = 0; i < turns.length; i++) {
    const turn = turns[i]!;
    if (turn.role === "tool") {
      const owner = turns
        .slice(0, i)
        .reverse()
        .find((t) => t.role === "assistant");
      if (owner?.role !== "assistant" || !owner.calls.some((call) => call.id === turn.callId))
        return `result ${turn.callId} does not follow its call`;
      continue;
    }
    if (turn.role !== "assistant" || turn.calls.length === 0) continue;
    const following = turns.slice(i + 1, i + 1 + turn.calls.length);
    const ids = following.map((t) => (t.role === "tool" ? t.callId : `<${t.role}>`));
    const expected = turn.calls.map((call) => call.id);
    if (JSON.stringify(ids) !== JSON.stringify(expected))
      return `calls ${expected.join(",")} are followed by ${ids.join(",") || "nothing"}`;
  }
  return undefined;
}
