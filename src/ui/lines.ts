import { escapeForTerminal, escapeLines, jsonForTerminal } from "../shared/terminal-text.js";
import { truncateToWidth } from "../shared/text-width.js";
import type { ChatLine, FooterStatus, UiStyle } from "./ui.js";

/**
 * The one place chat lines are made: every string harness did not write (tool names, arguments,
 * paths, commands, output, messages quoting them) is escaped here before colour is added, so an
 * implementation of the UI only lays lines out.
 */

/** Starts every line of model text and of quoted output; harness's own lines never start with it. */
export const MODEL_PREFIX = "│ ";

export type Tone = "plain" | "dim" | "ok" | "warn" | "error";

/** A line harness wrote whose `parts` may quote outside text: each part is escaped. */
export function note(style: UiStyle, tone: Tone, ...parts: string[]): ChatLine {
  return { text: paint(style, tone, parts.map(escapeForTerminal).join("")) };
}

/** Harness's own fixed words (no outside text in them): only coloured. */
export function own(style: UiStyle, tone: Tone, text: string): ChatLine {
  return { text: paint(style, tone, text) };
}

/** Text from outside spanning lines (output, a summary, an answer), each line under the prefix. */
export function quoted(style: UiStyle, text: string, indent = "  "): ChatLine[] {
  return escapeLines(text.replace(/\n+$/, "")).map((line) => ({
    text: `${indent}${style.dim(MODEL_PREFIX)}${line}`,
  }));
}

/** Model text lines (already split at newlines, raw): escaped under the prefix, in the model's colour. */
export function modelLine(style: UiStyle, raw: string): string {
  return `${style.dim(MODEL_PREFIX)}${style.cyan(escapeForTerminal(raw))}`;
}

/** The live line of a running call: its name and a short form of its arguments. */
export function toolLabel(style: UiStyle, name: string, args: unknown): ChatLine {
  return { text: `${style.bold(escapeForTerminal(name))} ${style.dim(argumentsBrief(args))}` };
}

/**
 * A call's short, stable name in line mode, where the lines of calls running at once would
 * otherwise be mixed without saying whose they are: the tool's name and the call's number in
 * this chat (`[shell#2]`), the name escaped.
 */
export function callTag(style: UiStyle, name: string, number: number): ChatLine {
  return { text: style.dim(`[${escapeForTerminal(name)}#${number}]`) };
}

/** One glyph per result status, the same in the chat and in `harness run`'s progress lines. */
export const STATUS_GLYPH: Readonly<Record<string, string>> = {
  ok: "✓",
  error: "✗",
  invalid: "✗",
  denied: "⊘",
  conflict: "≠",
  timeout: "⏱",
  cancelled: "⊘",
  unknown: "?",
};

/** A finished call, as the scrollback keeps it. */
export function toolDone(
  style: UiStyle,
  info: { name: string; status: string; duration_ms: number; summary: string },
): ChatLine {
  const glyph = STATUS_GLYPH[info.status] ?? "·";
  const mark =
    info.status === "ok"
      ? style.green(glyph)
      : info.status === "unknown"
        ? style.yellow(glyph)
        : style.red(glyph);
  const [first = ""] = escapeLines(info.summary.replace(/\n+$/, ""));
  return {
    text: `${mark} ${style.bold(escapeForTerminal(info.name))} ${escapeForTerminal(info.status)} ${style.dim(
      `${Math.round(info.duration_ms)} ms`,
    )}  ${first}`,
  };
}

/** The footer's one line. */
export function footerLine(style: UiStyle, status: FooterStatus): string {
  const parts = [
    escapeForTerminal(status.model),
    `${formatCount(status.inputTokens)} in / ${formatCount(status.outputTokens)} out`,
  ];
  if (status.contextUsed !== undefined && status.contextWindow !== undefined && status.contextWindow > 0) {
    const percent = Math.min(100, Math.round((status.contextUsed / status.contextWindow) * 100));
    parts.push(`context ${percent}% of ${formatCount(status.contextWindow)}`);
  }
  if (status.costUsd !== undefined) parts.push(`$${status.costUsd.toFixed(4)}`);
  parts.push(status.running ? "Esc interrupts" : "/help · Ctrl-D exits");
  return style.dim(parts.join(" · "));
}

function formatCount(n: number): string {
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

/** Arguments on one line, cut to stay a glance: the approval prompt shows them whole. */
function argumentsBrief(args: unknown): string {
  if (typeof args === "object" && args !== null) {
    const record = args as Record<string, unknown>;
    const main = record.command ?? record.path ?? record.pattern;
    if (typeof main === "string") return clip(escapeForTerminal(main), 80);
  }
  return clip(jsonForTerminal(args), 80);
}

/** Cut to `max` columns (wide characters count two), never inside a character. */
function clip(text: string, max: number): string {
  return truncateToWidth(text, max);
}

function paint(style: UiStyle, tone: Tone, text: string): string {
  switch (tone) {
    case "plain":
      return text;
    case "dim":
      return style.dim(text);
    case "ok":
      return style.green(text);
    case "warn":
      return style.yellow(text);
    case "error":
      return style.red(text);
  }
}
