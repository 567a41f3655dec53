import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { VIEWER_CSP, type ViewerRecord, viewerPage } from "../../src/viewer/page.js";

/**
 * A small HTTP server speaking the server protocol's HTTP side (POST /rpc, GET /events as SSE with
 * `id: SESSION:SEQ`, GET / the page, bearer or ?token= auth) over sessions a test writes records
 * into, so the live page can be driven and observed without the real session hub.
 */
export interface StubServer {
  url: string;
  token: string;
  /** Every JSON-RPC request the page sent, with the Authorization header it carried. */
  received: { method: string; params: Record<string, unknown>; authorization: string | undefined }[];
  /** Every request that reached the server (method and path with query). */
  hits: string[];
  addSession(id: string, records: Omit<ViewerRecord, "seq">[]): void;
  append(id: string, record: Omit<ViewerRecord, "seq">): ViewerRecord;
  /** End every open event stream of a session (the page's EventSource reconnects by itself). */
  drop(id: string): void;
  /** Replay every record on each connection, as a server that ignores Last-Event-ID would. */
  ignoreLastEventId: boolean;
  /** The Last-Event-ID header of each GET /events, in order (undefined: none sent). */
  lastEventIds: (string | undefined)[];
  /** A transient notification (no seq, never replayed). */
  transient(id: string, method: string, params: Record<string, unknown>): void;
  close(): Promise<void>;
}

interface StubSession {
  records: ViewerRecord[];
  streams: Set<ServerResponse>;
}

const METHODS: Record<string, string> = {
  "user.input": "turn/started",
  "model.started": "item/started",
  "tool.started": "item/started",
  "model.reply": "item/completed",
  "tool.result": "item/completed",
  "acceptance.checked": "item/completed",
  "run.finished": "turn/completed",
  "run.stopped": "turn/completed",
  "approval.requested": "approval/requested",
  "approval.decided": "approval/resolved",
};

function notification(session: string, record: ViewerRecord): string {
  const params: Record<string, unknown> = { session, seq: record.seq, hash: `h${record.seq}`, record };
  if (record.type === "approval.requested") params.approval_id = `${session}:${record.seq}`;
  return JSON.stringify({ jsonrpc: "2.0", method: METHODS[record.type] ?? "session/record", params });
}

export async function startStubServer(token = "t0ken-for-tests"): Promise<StubServer> {
  const sessions = new Map<string, StubSession>();
  const received: StubServer["received"] = [];
  const hits: string[] = [];
  const lastEventIds: (string | undefined)[] = [];

  const send = (session: string, record: ViewerRecord) => {
    for (const stream of sessions.get(session)?.streams ?? []) {
      stream.write(`id: ${session}:${record.seq}\ndata: ${notification(session, record)}\n\n`);
    }
  };
  const append = (id: string, record: Omit<ViewerRecord, "seq">): ViewerRecord => {
    const session = sessions.get(id)!;
    const full = { seq: session.records.length, ...record };
    session.records.push(full);
    send(id, full);
    return full;
  };

  const rpc = (method: string, params: Record<string, unknown>): unknown => {
    switch (method) {
      case "session/list":
        return {
          sessions: [...sessions].map(([session, s]) => ({
            session,
            workspace: "/ws",
            identity: "default",
            status: "running",
            goal: (s.records[0]?.data as { goal?: string } | undefined)?.goal,
            last_seq: s.records.length - 1,
          })),
        };
      case "session/read": {
        const s = sessions.get(String(params.session));
        if (!s) return undefined;
        return {
          session: params.session,
          records: s.records.slice(0, Number(params.limit ?? s.records.length)),
          head: null,
        };
      }
      case "session/verify": {
        const s = sessions.get(String(params.session))!;
        return { session: params.session, ok: true, records: s.records.length, head_hash: "h", problems: [] };
      }
      case "approval/respond": {
        const [session, seq] = String(params.approval_id).split(":");
        const requested = sessions.get(session!)!.records[Number(seq)]!;
        const data = requested.data as { call_id: string; call_hash: string };
        append(session!, {
          type: "approval.decided",
          time: new Date().toISOString(),
          data: {
            call_id: data.call_id,
            call_hash: data.call_hash,
            decision: params.decision === "decline" ? "deny" : "allow",
            scope: params.decision === "accept_session" ? "session" : "once",
            by: "identity:default",
          },
        });
        return {};
      }
      default:
        return undefined;
    }
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://stub");
    hits.push(`${req.method} ${url.pathname}${url.search}`);
    const given = req.headers.authorization?.replace(/^Bearer /, "") ?? url.searchParams.get("token");
    if (given !== token) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "unauthorized" } }));
      return;
    }
    if (req.method === "GET" && url.pathname === "/") {
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": VIEWER_CSP,
      });
      res.end(viewerPage());
      return;
    }
    if (req.method === "POST" && url.pathname === "/rpc") {
      let body = "";
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString("utf8");
      });
      req.on("end", () => {
        const request = JSON.parse(body) as { id: number; method: string; params: Record<string, unknown> };
        received.push({
          method: request.method,
          params: request.params,
          authorization: req.headers.authorization,
        });
        const result = rpc(request.method, request.params);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify(
            result === undefined
              ? { jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "method not found" } }
              : { jsonrpc: "2.0", id: request.id, result },
          ),
        );
      });
      return;
    }
    if (req.method === "GET" && url.pathname === "/events") {
      const id = url.searchParams.get("session") ?? "";
      const session = sessions.get(id);
      if (!session) {
        res.writeHead(404).end();
        return;
      }
      const last = req.headers["last-event-id"];
      lastEventIds.push(typeof last === "string" ? last : undefined);
      const after = typeof last === "string" && !stub.ignoreLastEventId ? Number(last.split(":")[1]) : -1;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
      // Reconnect quickly after a drop (the browser's default wait is seconds).
      res.write("retry: 100\n\n");
      for (const record of session.records) {
        if (record.seq > after) res.write(`id: ${id}:${record.seq}\ndata: ${notification(id, record)}\n\n`);
      }
      session.streams.add(res);
      req.on("close", () => session.streams.delete(res));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const stub: StubServer = {
    url: `http://127.0.0.1:${port}`,
    ignoreLastEventId: false,
    token,
    received,
    hits,
    lastEventIds,
    drop(id) {
      const session = sessions.get(id);
      for (const stream of session?.streams ?? []) stream.end();
      session?.streams.clear();
    },
    addSession(id, records) {
      sessions.set(id, { records: [], streams: new Set() });
      for (const record of records) append(id, record);
    },
    append,
    transient(id, method, params) {
      const line = JSON.stringify({ jsonrpc: "2.0", method, params: { session: id, ...params } });
      for (const stream of sessions.get(id)?.streams ?? []) stream.write(`data: ${line}\n\n`);
    },
    async close() {
      for (const s of sessions.values()) for (const stream of s.streams) stream.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return stub;
}
