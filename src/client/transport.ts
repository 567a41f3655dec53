import { RpcError } from "../api/index.js";

/**
 * What the client needs from a connection. Both deal in raw values (`unknown`): the client
 * checks everything against the protocol's schemas, whichever way it arrived.
 */
export interface Transport {
  /** One request; resolves with the raw `result`, rejects with an `RpcError`. */
  call(method: string, params: unknown): Promise<unknown>;
  /**
   * The raw notifications of one session from `fromSeq` on (replayed, then live), until `signal`
   * aborts or the connection closes. Raw values the transport could not read as a notification
   * are pushed as an `RpcError` (the client throws it from the iterator).
   */
  events(session: string, fromSeq: number, signal: AbortSignal, push: (raw: unknown) => void): Promise<void>;
  /** Every notification the connection carries, whatever the session (stdio); absent over HTTP. */
  onNotification?(listener: (raw: unknown) => void): void;
  close(): Promise<void>;
}

/** harness's client-side codes in `RpcError.data.code`. */
export const ClientErrorCode = {
  /** The server sent something that is not this protocol. */
  ProtocolViolation: "PROTOCOL_VIOLATION",
  /** The connection ended (server exited, stream closed, client closed). */
  ConnectionClosed: "CONNECTION_CLOSED",
  /** The server could not be reached. */
  ConnectionFailed: "CONNECTION_FAILED",
} as const;

export function protocolViolation(message: string, extra: Record<string, unknown> = {}): RpcError {
  return new RpcError(-32603, message, { code: ClientErrorCode.ProtocolViolation, ...extra });
}

export function connectionClosed(message: string): RpcError {
  return new RpcError(-32603, message, { code: ClientErrorCode.ConnectionClosed });
}

export function connectionFailed(message: string): RpcError {
  return new RpcError(-32603, message, { code: ClientErrorCode.ConnectionFailed });
}
