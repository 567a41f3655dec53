import { type Histogram, type HrTime, SpanKind, SpanStatusCode, TraceFlags } from "@opentelemetry/api";
import { ExportResultCode } from "@opentelemetry/core";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import {
  detectResources,
  envDetector,
  type Resource,
  resourceFromAttributes,
} from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import type { DerivedSpan } from "./spans.js";

/*
 * The one place the OpenTelemetry SDK is loaded. The spans are built by the fold (spans.ts) with
 * their ids already derived from the journal, so they are handed to the SDK's batch processor and
 * OTLP/HTTP exporter as ReadableSpan objects directly: no Tracer, whose IdGenerator would have to
 * be told each id out of band. Both exporters read the standard OTEL_EXPORTER_OTLP_* variables
 * (endpoint, headers, timeout), and the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
 */

export interface OtlpSink {
  /** Queue finished spans (and record their metrics); sent in batches. */
  spans(spans: readonly DerivedSpan[]): void;
  /** Send everything queued now. */
  flush(): Promise<void>;
  /** Flush, then stop the exporters. */
  shutdown(): Promise<void>;
  /** Why the last failed span export failed (the collector refused, or could not be reached). */
  failure(): string | undefined;
}

export interface SinkOptions {
  /** harness's version, as `service.version` and the instrumentation scope's. */
  version: string;
}

export function otlpSink(options: SinkOptions): OtlpSink {
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: "harness",
    [ATTR_SERVICE_VERSION]: options.version,
  }).merge(detectResources({ detectors: [envDetector] }));
  const scope = { name: "harness", version: options.version };
  const otlp = new OTLPTraceExporter();
  let failure: string | undefined;
  // The SDK reports a failed export only to its diagnostics logger: kept for `otel export` to report.
  const exporter: SpanExporter = {
    export(spans, done) {
      otlp.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) failure = result.error?.message ?? "the export failed";
        done(result);
      });
    },
    shutdown: () => otlp.shutdown(),
    forceFlush: () => otlp.forceFlush(),
  };
  const processor = new BatchSpanProcessor(exporter, {
    // A span is queued at most once; a burst (a whole session) is sent in a few requests.
    maxExportBatchSize: 512,
    maxQueueSize: 65_536,
    scheduledDelayMillis: 1_000,
  });
  const reader = new PeriodicExportingMetricReader({
    exporter: new OTLPMetricExporter(),
    exportIntervalMillis: 60_000,
  });
  const meters = new MeterProvider({ resource, readers: [reader] });
  const meter = meters.getMeter("harness", options.version);
  const metrics = {
    tokens: meter.createHistogram("gen_ai.client.token.usage", {
      unit: "{token}",
      description: "Tokens used by a model request, as the provider reported them",
    }),
    duration: meter.createHistogram("gen_ai.client.operation.duration", {
      unit: "s",
      description: "Duration of a GenAI operation (model request, tool call)",
    }),
  };
  return {
    spans(spans) {
      for (const span of spans) {
        processor.onEnd(readableSpan(span, resource, scope));
        recordMetrics(metrics, span);
      }
    },
    async flush() {
      await processor.forceFlush();
      await meters.forceFlush();
    },
    async shutdown() {
      await processor.shutdown();
      await meters.shutdown();
    },
    failure: () => failure,
  };
}

/** The metric attributes the GenAI conventions name, copied from the span. */
const METRIC_ATTRIBUTES = [
  "gen_ai.operation.name",
  "gen_ai.request.model",
  "gen_ai.provider.name",
  "gen_ai.tool.name",
];

function recordMetrics(metrics: { tokens: Histogram; duration: Histogram }, span: DerivedSpan): void {
  const operation = span.attributes["gen_ai.operation.name"];
  if (operation !== "chat" && operation !== "execute_tool") return;
  const attributes: Record<string, string> = {};
  for (const name of METRIC_ATTRIBUTES) {
    const value = span.attributes[name];
    if (typeof value === "string") attributes[name] = value;
  }
  if (span.error !== undefined) attributes["error.type"] = span.error;
  metrics.duration.record((span.endMs - span.startMs) / 1000, attributes);
  const input = span.attributes["gen_ai.usage.input_tokens"];
  const output = span.attributes["gen_ai.usage.output_tokens"];
  if (typeof input === "number")
    metrics.tokens.record(input, { ...attributes, "gen_ai.token.type": "input" });
  if (typeof output === "number")
    metrics.tokens.record(output, { ...attributes, "gen_ai.token.type": "output" });
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

export function readableSpan(
  span: DerivedSpan,
  resource: Resource,
  scope: { name: string; version: string },
): ReadableSpan {
  const context = { traceId: span.traceId, spanId: span.spanId, traceFlags: TraceFlags.SAMPLED };
  return {
    name: span.name,
    kind: span.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL,
    spanContext: () => context,
    ...(span.parentSpanId !== undefined
      ? {
          parentSpanContext: {
            traceId: span.traceId,
            spanId: span.parentSpanId,
            traceFlags: TraceFlags.SAMPLED,
          },
        }
      : {}),
    startTime: hrTime(span.startMs),
    endTime: hrTime(span.endMs),
    duration: hrTime(span.endMs - span.startMs),
    status:
      span.error === undefined
        ? { code: SpanStatusCode.UNSET }
        : { code: SpanStatusCode.ERROR, message: span.error },
    attributes: span.attributes,
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}
