/**
 * `harness/client`: the typed client of `harness serve` (protocol version 1), over HTTP or stdio.
 *
 *   const client = await connectHttp({ url, token });
 *   const { session } = await client.startSession({ workspace, goal: "fix the test" });
 *   for await (const event of client.events(session)) { ... }
 */
export type {
  ApprovalDecision,
  ApprovalRequested,
  DurableNotification,
  JournalRecord,
  MethodName,
  Notification,
  NotificationName,
  NotificationParams,
  ParamsOf,
  ResultOf,
  RunOptions,
  SessionStatus,
  SessionSummary,
} from "../api/index.js";
export { ErrorCode, PROTOCOL_VERSION, RpcError } from "../api/index.js";
export type { ApprovalHandler, EventsOptions, HarnessClient } from "./client.js";
export { connectHttp, type HttpOptions } from "./http.js";
export { connectStdio, connectStreams, type StdioOptions } from "./stdio.js";
export { ClientErrorCode } from "./transport.js";
