import type { AnyRecord } from "../journal/vocabulary.js";
import { contentScrubber } from "./content.js";
import { otlpSink } from "./export.js";
import { traceparent } from "./ids.js";
import { SessionTrace } from "./trace.js";

/**
 * Live export: records as the engine appends them (an EngineListener's `record` and
 * `agentRecord`) go through the same fold `harness otel export` runs, and each span is queued for
 * the OTLP exporter when the record that ends it arrives. The fold is synchronous and cheap; the
 * exporter sends in batches off the step's path.
 */
export interface LiveExport {
  record(record: AnyRecord): void;
  agentRecord(path: string, record: AnyRecord): void;
  /**
   * The W3C traceparent of call `callId` of the session (`path` "") or of its sub-agent at `path`,
   * once its tool.started has been seen.
   */
  traceparentOf(callId: string, path?: string): string | undefined;
  /** Send what is queued, spans still open included (marked incomplete), and stop. */
  shutdown(): Promise<void>;
}

export function startLiveExport(sessionId: string, options: { version: string }): LiveExport {
  const trace = new SessionTrace(sessionId, contentScrubber(process.env));
  const sink = otlpSink({ version: options.version });
  // A door may hand a record on twice (a hosted session's listener outlives a turn): each record
  // is folded once, by its sequence in its own journal.
  const lastSeq = new Map<string, number>();
  const push = (path: string, record: AnyRecord) => {
    if (record.seq <= (lastSeq.get(path) ?? -1)) return;
    lastSeq.set(path, record.seq);
    sink.spans(trace.push(path, record));
  };
  // An exporter failure never reaches the run: the SDK reports it to its diagnostics logger only.
  return {
    record: (record) => push("", record),
    agentRecord: push,
    traceparentOf(callId, path = "") {
      const span = trace.spanOfCall(callId, path);
      return span === undefined ? undefined : traceparent(trace.traceId, span);
    },
    async shutdown() {
      sink.spans(trace.flush());
      await sink.shutdown();
    },
  };
}
