import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as a loopback OTLP/HTTP JSON receiver got it. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  service: unknown;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

function otlpValue(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(otlpValue);
  return undefined;
}

function attributes(list: { key: string; value: OtlpValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, otlpValue(a.value)]));
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * A loopback OTLP/HTTP receiver taking JSON (what @opentelemetry/exporter-*-otlp-http send):
 * spans from /v1/traces, metric names from /v1/metrics, and the headers each request carried.
 */
export async function otlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const metrics: string[] = [];
  const headers: Record<string, string | string[] | undefined>[] = [];
  const server = createServer((req, res) => {
    void body(req).then((text) => {
      headers.push(req.headers);
      const parsed = JSON.parse(text) as Record<string, unknown[]>;
      if (req.url === "/v1/traces") {
        for (const rs of (parsed.resourceSpans ?? []) as {
          resource?: { attributes?: { key: string; value: OtlpValue }[] };
          scopeSpans?: { spans?: Record<string, unknown>[] }[];
        }[]) {
          const service = attributes(rs.resource?.attributes)["service.name"];
          for (const ss of rs.scopeSpans ?? [])
            for (const span of ss.spans ?? [])
              spans.push({
                traceId: String(span.traceId),
                spanId: String(span.spanId),
                parentSpanId: String(span.parentSpanId ?? ""),
                name: String(span.name),
                attributes: attributes(span.attributes as { key: string; value: OtlpValue }[]),
                status: (span.status ?? {}) as ReceivedSpan["status"],
                service,
              });
        }
      } else if (req.url === "/v1/metrics") {
        for (const rm of (parsed.resourceMetrics ?? []) as {
          scopeMetrics?: { metrics?: { name: string }[] }[];
        }[])
          for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) metrics.push(m.name);
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    metrics,
    headers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
