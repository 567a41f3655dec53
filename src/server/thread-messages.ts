import { ErrorCode, RpcError } from "../api/errors.js";

/*
 * What crosses between `harness serve`'s main thread and a session thread (threaded-factory.ts,
 * session-thread.ts). Everything is message-shaped and structured-clone safe: requests in, records
 * and approval asks out, errors as data (name, message, code), never a stack trace.
 */

/** An error as it crosses: enough to rebuild what the RPC layer maps to a client's error. */
export type WireError =
  | { kind: "rpc"; code: number; message: string; data?: unknown }
  | { kind: "error"; name: string; message: string; code?: string };

export function errorToWire(error: unknown): WireError {
  if (error instanceof RpcError)
    return {
      kind: "rpc",
      code: error.code,
      message: error.message,
      ...(error.data !== undefined ? { data: cloneable(error.data) } : {}),
    };
  const code = (error as { code?: unknown } | null)?.code;
  return {
    kind: "error",
    name: error instanceof Error ? error.name : "Error",
    message: error instanceof Error ? error.message : String(error),
    ...(typeof code === "string" ? { code } : {}),
  };
}

/** The error a wire error stands for: an RpcError as thrown, else an Error with its name and code. */
export function errorFromWire(wire: WireError): Error {
  if (wire.kind === "rpc") return new RpcError(wire.code, wire.message, wire.data);
  const error = new Error(wire.message) as Error & { code?: string };
  error.name = wire.name;
  if (wire.code !== undefined) error.code = wire.code;
  return error;
}

/** The thread itself stopped (crashed, ran out of memory, was terminated): what its sessions see. */
export function threadLostError(why: string): Error {
  return new RpcError(ErrorCode.InternalError, `the session's thread stopped: ${why}`, {
    code: "SESSION_THREAD_LOST",
  });
}

/** Data that a structured clone takes (JSON values); anything else is dropped. */
function cloneable(data: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(data)) as unknown;
  } catch {
    return undefined;
  }
}

/** What the main thread sends a session thread. */
export type ToThread =
  | { type: "open"; id: number; request: ThreadOpenRequest }
  | { type: "run"; id: number; session: string; kind: "turn" | "compact"; input: string | undefined }
  | { type: "steer"; id: number; session: string; text: string }
  | { type: "interrupt"; session: string }
  | { type: "close"; id: number; session: string }
  | { type: "decision"; approval: number; decision: unknown }
  | { type: "quota.reply"; id: number; ok: true; value: unknown }
  | { type: "quota.reply"; id: number; ok: false; error: WireError };

/** An open request without its functions (the approver is the thread's proxy). */
export interface ThreadOpenRequest {
  workspace: string;
  script?: { path: string; code: boolean };
  sessionId?: string;
  options: unknown;
  identity: unknown;
}

/** What a session thread sends the main thread. */
export type FromThread =
  | { type: "ready"; threadId: number }
  | { type: "reply"; id: number; ok: true; value?: unknown }
  | { type: "reply"; id: number; ok: false; error: WireError }
  | { type: "record"; session: string; record: unknown }
  | { type: "agent-record"; session: string; path: string; record: unknown }
  | { type: "stream"; session: string; event: unknown }
  | { type: "approval"; session: string; approval: number; request: unknown }
  | { type: "approval.cancel"; approval: number }
  | { type: "quota.reserve"; id: number; identity: string; estimate: unknown }
  | { type: "quota.settle"; id: number; hold: number; actual: unknown }
  | { type: "groups"; add?: number; remove?: number }
  | { type: "log"; line: string }
  /** Messages handled one after another in one go (a turn's end and its answer; a record and its ask). */
  | { type: "batch"; messages: FromThread[] };

/** What the thread answers an open with (the main thread's OpenedSession is built from it). */
export interface OpenedReply {
  sessionId: string;
  workspace: string;
  records: unknown[];
  /** Command templates a turn may name that are not loaded, with why: refused before a turn starts. */
  refused: Record<string, string>;
}

/** How a session thread is set up. */
export interface ThreadSetup {
  sessionThread: true;
  /** Credentials of this process every sandbox hides (the serve --tokens file). */
  secrets: string[];
  /** Whether identities have quotas (reserve/settle go to the main thread). */
  quotas: boolean;
  /** fsync threads of the thread's own group commit (0: libuv's pool only, which all threads share). */
  fsyncThreads: number;
}
