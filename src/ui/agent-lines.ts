import type { AnyRecord } from "../journal/vocabulary.js";
import { escapeForTerminal, escapeLines } from "../shared/terminal-text.js";
import { note, STATUS_GLYPH } from "./lines.js";
import type { ChatLine, UiStyle } from "./ui.js";

/**
 * What the chat shows of a sub-agent while its `agent` call runs: one line per finished call of
 * the child and one for its end, under the agent's path (`worker`, `worker/sub` for a grandchild),
 * so the person sees the child work instead of a call that only runs. Its other records stay in
 * its journal (`harness inspect PARENT/LABEL`). The path, tool names, summaries and reasons are
 * the child's (model-controlled): each is escaped, and every line starts with the arrow harness's
 * own lines of the parent never start with.
 */
export function agentRecordLine(style: UiStyle, path: string, record: AnyRecord): ChatLine | undefined {
  const who = `  ↳ ${escapeForTerminal(path)}: `;
  switch (record.type) {
    case "tool.result": {
      const { name, status, summary } = record.data;
      const glyph = STATUS_GLYPH[status] ?? "·";
      const mark =
        status === "ok" ? style.green(glyph) : status === "unknown" ? style.yellow(glyph) : style.red(glyph);
      const [first = ""] = escapeLines(summary.replace(/\n+$/, ""));
      return {
        text: `${style.dim(who)}${mark} ${style.bold(escapeForTerminal(name))} ${escapeForTerminal(status)}  ${first}`,
      };
    }
    case "run.finished":
      return note(
        style,
        record.data.status === "verified" ? "ok" : "dim",
        who,
        `ended ${record.data.status}`,
      );
    case "run.stopped":
      return note(style, "warn", who, `stopped ${record.data.status}: `, record.data.reason);
    case "run.cancelled":
      return note(style, "warn", who, "cancelled: ", record.data.reason);
    case "model.failed":
      return note(style, "error", who, `✗ model failed: ${record.data.code}: `, record.data.message);
    default:
      return undefined;
  }
}
