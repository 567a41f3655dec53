import { otelConfigured } from "../../otel/enabled.js";
import { DATABASE_HELP, openSessionSource } from "../../session/journal-source.js";
import { UsageError } from "../../session/usage-error.js";
import { harnessVersion } from "../../session/version.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { type AgentNode, agentTree } from "../agent-tree.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { stderrNotices } from "../notices.js";
import { LAST_OPTION, sessionIdFromArgs } from "../session-id.js";

const HELP = `Usage: harness otel export SESSION [--workspace DIR] [--database URL] [--json]
       harness otel export --last [--workspace DIR] [--json]

Send a recorded session, with its sub-agents, to an OpenTelemetry collector as traces and
metrics over OTLP/HTTP. The spans are derived from the journal the way a live export derives
them (harness run, chat, serve and worker export live when OTEL_EXPORTER_OTLP_ENDPOINT is set):
trace and span ids come from the session id and the record hashes, so exporting a session again,
or after a live export, sends the same spans and a collector keeps one copy.

Configured by the standard variables: OTEL_EXPORTER_OTLP_ENDPOINT (required, e.g.
http://localhost:4318), OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES.
Prompt and result content is not sent unless HARNESS_OTEL_CONTENT=1, and then scrubbed of the
values of credential-looking variables, as all output is.

  -w, --workspace DIR the workspace whose session it is (default: the current directory)
  --last              the session written most recently
  --json              one JSON summary: session, trace_id, spans (id, parent, name), endpoint
${DATABASE_HELP}

Exit 0 when sent, 1 when the collector refused or could not be reached, 64 on bad usage (no endpoint configured, an unknown session).`;

export const otelCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const [sub, ...rest] = args;
    if (sub !== "export")
      throw new UsageError("harness otel has one subcommand: harness otel export SESSION");
    const { values, positionals } = parse(rest, {
      workspace: { type: "string", short: "w" },
      database: { type: "string" },
      json: { type: "boolean" },
      ...LAST_OPTION,
    });
    if (positionals.length > 1) throw new UsageError("name one session: harness otel export SESSION");
    if (!otelConfigured()) {
      throw new UsageError(
        "no collector configured: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://localhost:4318) and run again",
      );
    }
    const sessionId = await sessionIdFromArgs(
      values,
      positionals[0],
      values.last,
      "harness otel export SESSION",
    );
    const source = await openSessionSource(values, sessionId, { notify: stderrNotices });
    const read = await (async () => {
      const { records } = await source.verifiedPrefix(sessionId);
      return { records, agents: await agentTree(source.store, records) };
    })().finally(() => source.close());
    // Loaded only here: the SDK costs nothing to commands that do not export.
    const [{ recordedSpans }, { otlpSink }, { contentScrubber }] = await Promise.all([
      import("../../otel/trace.js"),
      import("../../otel/export.js"),
      import("../../otel/content.js"),
    ]);
    const { traceId, spans } = recordedSpans(
      sessionId,
      read.records,
      recorded(read.agents),
      contentScrubber(process.env),
    );
    const sink = otlpSink({ version: harnessVersion() });
    sink.spans(spans);
    await sink.shutdown();
    const failure = sink.failure();
    if (failure !== undefined) {
      process.stderr.write(
        `harness otel export: the collector did not take the spans: ${escapeForTerminal(failure)}\n`,
      );
      return EXIT.internal;
    }
    const endpoint =
      process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "";
    if (values.json) {
      const shown = spans.map((span) => ({
        span_id: span.spanId,
        parent_span_id: span.parentSpanId ?? null,
        name: span.name,
      }));
      process.stdout.write(
        `${JSON.stringify({ session: sessionId, trace_id: traceId, endpoint, spans: shown })}\n`,
      );
    } else {
      process.stdout.write(
        `exported session ${escapeForTerminal(sessionId)}: ${spans.length} spans, trace ${traceId}, to ${escapeForTerminal(endpoint)}\n`,
      );
    }
    return EXIT.ok;
  },
};

function recorded(
  nodes: readonly AgentNode[],
): { label: string; records: AgentNode["records"]; agents: ReturnType<typeof recorded> }[] {
  return nodes.map((node) => ({ label: node.label, records: node.records, agents: recorded(node.agents) }));
}
