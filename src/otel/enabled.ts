import type { AnyRecord } from "../journal/vocabulary.js";
import type { LiveExport } from "./live.js";

export type { LiveExport };

/*
 * The door to live export, importable at no cost: the SDK (live.ts, export.ts) is imported only
 * when an endpoint is configured, so a run without OpenTelemetry loads none of it.
 */

/** Whether the standard variables ask for OTLP export (traces or all signals). */
export function otelConfigured(environment: NodeJS.ProcessEnv = process.env): boolean {
  const set = (name: string) => (environment[name] ?? "").trim() !== "";
  return set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
}

/** A live export of session `sessionId`, or undefined when OpenTelemetry is not configured. */
export async function liveExport(sessionId: string, version: string): Promise<LiveExport | undefined> {
  if (!otelConfigured()) return undefined;
  const { startLiveExport } = await import("./live.js");
  return startLiveExport(sessionId, { version });
}

/** A listener with the live export's record hooks added to `listener`'s own. */
export function withLiveExport<L extends RecordHooks>(listener: L, live: LiveExport | undefined): L {
  if (live === undefined) return listener;
  return {
    ...listener,
    record(record: AnyRecord) {
      live.record(record);
      listener.record?.(record);
    },
    agentRecord(path: string, record: AnyRecord) {
      live.agentRecord(path, record);
      listener.agentRecord?.(path, record);
    },
    // The session's calls carry its trace on to the MCP servers they reach.
    traceparent: (callId: string) => live.traceparentOf(callId),
    // And its sub-agents' calls, whose spans nest in the same trace.
    agentTraceparent: (path: string, callId: string) => live.traceparentOf(callId, path),
  };
}

interface RecordHooks {
  record?(record: AnyRecord): void;
  agentRecord?(path: string, record: AnyRecord): void;
}
