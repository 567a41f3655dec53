import type { EngineListener } from "../engine/options.js";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { escapeForTerminal, escapeLines } from "../shared/terminal-text.js";
import { checkOutputLines } from "../ui/call-lines.js";
import { STATUS_GLYPH } from "../ui/lines.js";
import type { CallShow } from "./call-show.js";
import type { Style } from "./style.js";

/**
 * Starts every line of streamed model text. Harness's own lines never start with it, so a model
 * that prints "✓ acceptance: ..." or "status verified" cannot pass it off as harness's.
 */
export const MODEL_TEXT_PREFIX = "│ ";

/**
 * Human progress on stderr: streamed model text, one line per tool call with status and
 * duration. `--events` adds every durable journal record as NDJSON on stdout, and the model's
 * text as it streams as transient `{"transient":true,"type":"text.delta","text":...}` lines, and a running
 * call's output as transient `{"transient":true,"type":"tool.output","call_id":...,"text":...}` lines, and each
sub-agent's records as they are written, with `"agent": "LABEL"` (`a/b` for a grandchild). Every string that
 * harness did not write itself is escaped (terminal-text.ts) before harness styles it.
 */
export function createProgress(options: {
  err: NodeJS.WritableStream;
  out: NodeJS.WritableStream;
  style: Style;
  events: boolean;
  quiet: boolean;
  /** Shows each finished call's diff and command output; absent with --quiet-calls. */
  show?: CallShow;
}): EngineListener {
  const { err, out, style } = options;
  let midLine = false;
  const endLine = () => {
    if (midLine) err.write("\n");
    midLine = false;
  };
  const prefix = style.dim(MODEL_TEXT_PREFIX);
  // Model text arrives in pieces that may end mid-line: each line gets the prefix when it starts.
  const writeModelText = (text: string) => {
    const lines = text.split("\n");
    lines.forEach((line, index) => {
      if (index > 0) {
        if (!midLine) err.write(prefix);
        err.write("\n");
        midLine = false;
      }
      if (line === "") return;
      if (!midLine) err.write(prefix);
      err.write(style.cyan(escapeForTerminal(line)));
      midLine = true;
    });
  };
  // For UIs: a running call's output as it arrives (batched by the tool), transient like text
  // deltas: the call's tool.result record holds what is kept. Without --events nobody asks for it.
  const toolOutput = (callId: string, text: string) =>
    out.write(`${JSON.stringify({ transient: true, type: "tool.output", call_id: callId, text })}\n`);
  return {
    ...(options.events ? { toolOutput } : {}),
    // A sub-agent's records, each tagged with its path below this session (`a/b` for a grandchild).
    ...(options.events
      ? {
          agentRecord(path: string, record: AnyRecord) {
            out.write(`${JSON.stringify({ ...record, agent: path })}\n`);
          },
        }
      : {}),
    record(record) {
      if (options.events) out.write(`${JSON.stringify(record)}\n`);
      if (options.quiet) return;
      switch (record.type) {
        case "lock.recovered":
          endLine();
          err.write(
            style.yellow(
              `harness: took over the stale writer lock of pid ${record.data.pid} on ${escapeForTerminal(record.data.host)} ` +
                `(started ${escapeForTerminal(record.data.started_at)}): ${escapeForTerminal(record.data.reason)}\n`,
            ),
          );
          break;
        case "model.started": {
          endLine();
          const { estimated_input_tokens: estimate, context_window: window } = record.data;
          const size =
            estimate === undefined || window === undefined ? "" : `, ~${estimate} of ${window} tokens`;
          err.write(
            style.dim(
              `· model request (step ${record.data.step + 1}, attempt ${record.data.attempt + 1}${size})\n`,
            ),
          );
          break;
        }
        case "model.retryable_error":
          endLine();
          err.write(
            style.yellow(
              `  ↻ ${escapeForTerminal(record.data.code)}: ${escapeForTerminal(record.data.message)} (retry in ${record.data.retry_in_ms} ms)\n`,
            ),
          );
          break;
        case "model.protocol_error":
          endLine();
          err.write(
            style.red(
              `  ✗ protocol error: ${escapeForTerminal(record.data.error)}; nothing from this reply runs\n`,
            ),
          );
          break;
        case "model.failed":
          endLine();
          err.write(
            style.red(
              `  ✗ model failed: ${escapeForTerminal(record.data.code)}: ${escapeForTerminal(record.data.message)}\n`,
            ),
          );
          break;
        case "tools.changed":
          endLine();
          for (const line of toolsChangedLines(record.data)) err.write(style.yellow(`harness: ${line}\n`));
          break;
        case "acceptance.checked":
          endLine();
          for (const check of record.data.checks) {
            const mark = check.passed ? style.green("✓") : style.red("✗");
            err.write(`${mark} acceptance: ${escapeForTerminal(check.name)} (${check.duration_ms} ms)\n`);
            if (!check.passed)
              for (const line of checkOutputLines(style, check.output)) err.write(`${line.text}\n`);
          }
          break;
        default:
          break;
      }
      const shown = options.show?.linesFor(record) ?? [];
      if (shown.length > 0) {
        endLine();
        for (const line of shown) err.write(`${line.text}\n`);
      }
    },
    stream(event) {
      // For UIs: the model's text as it streams, marked transient (never a journal record; the
      // reply arrives whole as the model.reply record).
      if (options.events && event.type === "text_delta" && event.text.length > 0)
        out.write(`${JSON.stringify({ transient: true, type: "text.delta", text: event.text })}\n`);
      if (options.quiet) return;
      if (event.type === "text_delta" && event.text.length > 0) writeModelText(event.text);
      if (event.type === "end") endLine();
    },
    callFinished(info) {
      if (options.quiet) return;
      endLine();
      const glyph = STATUS_GLYPH[info.status] ?? "·";
      const colored =
        info.status === "ok"
          ? style.green(glyph)
          : info.status === "unknown"
            ? style.yellow(glyph)
            : style.red(glyph);
      // A summary can quote a command's output over several lines: each continuation line carries
      // the model-text marker, so none of them can pass for one of harness's own lines.
      const [first = "", ...rest] = escapeLines(info.summary.replace(/\n+$/, ""));
      const continued = rest.map((line) => `\n  ${style.dim("│")} ${line}`).join("");
      err.write(
        `${colored} ${style.bold(escapeForTerminal(info.name))} ${info.status} ${style.dim(`${info.duration_ms} ms`)}  ${first}${continued}\n`,
      );
    },
  };
}

/**
 * What a change of the tool surface means for the user: which tools the model is offered from now
 * on, and why a tool that was listed is not (its schema does not compile, or it was no longer
 * listed). Names come from MCP servers: escaped.
 */
export function toolsChangedLines(change: EventData<"tools.changed">): string[] {
  const names = (list: readonly string[]) => list.map(escapeForTerminal).join(", ");
  const lines: string[] = [];
  const counts = [
    change.added.length > 0 ? `added ${names(change.added)}` : "",
    change.changed.length > 0 ? `changed ${names(change.changed)}` : "",
    change.removed.length > 0 ? `removed ${names(change.removed)}` : "",
  ].filter(Boolean);
  const when = change.reason === "resume" ? "since the session last ran" : `before step ${change.step + 1}`;
  lines.push(`the tools changed ${when}: ${counts.length > 0 ? counts.join("; ") : "new descriptions"}`);
  for (const tool of change.unavailable ?? []) {
    lines.push(
      `MCP tool ${escapeForTerminal(JSON.stringify(tool.tool))} of server "${escapeForTerminal(tool.server)}" cannot be used: ${escapeForTerminal(tool.reason)}`,
    );
  }
  return lines;
}
