/**
 * The chat's UI seam: what `harness chat` shows and what a person does, independent of how the
 * terminal is drawn. Two implementations pass one contract suite (test/ui/contract.ts): the
 * full-screen editor (`pi-tui.ts`) on a terminal, and plain lines (`line-ui.ts`) when stdin or
 * stdout is not one.
 *
 * Trust: `modelText` and `ChatLine.text` are the only ways text reaches the screen. Model text is
 * raw and every implementation escapes it (shared/terminal-text.ts) under the model-text prefix;
 * a `ChatLine` is built by `lines.ts`, which escapes every string harness did not write before
 * adding colour. An implementation never prints anything else it was given.
 */

/** What a person did: the controller decides what each means for the running turn. */
export interface ChatHandlers {
  /**
   * Enter with text: a prompt between turns, a steer while a turn runs, or a slash command.
   * Resolves when it has been handled (a prompt: when its turn ended), for a UI that takes
   * input one message at a time (line mode).
   */
  submit(text: string): Promise<void> | undefined;
  /** Esc, or Ctrl-C on an empty input: stop the running turn. */
  interrupt(): void;
  /** Ctrl-C twice, Ctrl-D on an empty input, or the input closing: leave the chat. */
  exit(): void;
}

/** One line harness lays out (already escaped and coloured by lines.ts). */
export interface ChatLine {
  readonly text: string;
}

/** An inline approval: the lines to show (diff preview, command, cwd, sandbox) and the question. */
export interface ApprovalView {
  lines: readonly ChatLine[];
  question: ChatLine;
  /**
   * The rule `p` adds for the session (a command's prefix, `shell(npm test*)`, escaped), when
   * the question offers it.
   */
  prefix?: string;
}

/** What the scrollback says after the question: the answer, and for a prefix the rule it added. */
export function answerText(style: UiStyle, view: ApprovalView, answer: ApprovalAnswer): string {
  if (answer === "deny") return style.red("denied");
  if (answer === "prefix") return style.green(`approved (session: ${view.prefix ?? "prefix"})`);
  return style.green(`approved (${answer})`);
}

/**
 * `y` once, `s` this exact call for the session, `p` the offered prefix for the session, `n` (or
 * Esc) denies. On a terminal no other key answers; a line answers in line mode, where any other
 * line denies.
 */
export type ApprovalAnswer = "once" | "session" | "prefix" | "deny";

/** A choice the person asked for (/undo's points, /sessions): a title and one line per row. */
export interface PickView {
  title: ChatLine;
  rows: readonly ChatLine[];
}

/** The status footer: model, tokens used, context fill, cost when the profile has prices. */
export interface FooterStatus {
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** The last request's estimated size and the window it had to fit (unknown before the first). */
  contextUsed?: number;
  contextWindow?: number;
  /** US dollars, only when the profile has prices. */
  costUsd?: number;
  /** Whether a turn is running (the footer says how to interrupt it). */
  running: boolean;
}

export interface ChatUi {
  /** Start reading input; the handlers are called for what the person does until `stop`. */
  start(handlers: ChatHandlers): void;
  /** Restore the terminal; safe to call twice. */
  stop(): Promise<void>;
  /** A piece of streamed model text, raw: the UI escapes it and lays it out under the prefix. */
  modelText(delta: string): void;
  /** The streamed reply ended: the next text starts a new block. */
  endModelText(): void;
  /** One of harness's own lines in the scrollback. */
  line(line: ChatLine): void;
  /**
   * A tool call started: one live line (spinner, elapsed time) until `toolFinished`. `tag` names
   * the call in few characters (lines.ts `callTag`), for a UI whose lines of different calls
   * can be mixed (line mode labels each of the call's lines with it).
   */
  toolStarted(id: string, label: ChatLine, tag: ChatLine): void;
  /** The last output lines of a running call (a shell command's), shown under its live line. */
  toolOutput(id: string, lines: readonly ChatLine[]): void;
  /** The call ended: its live line becomes this line in the scrollback. */
  toolFinished(id: string, line: ChatLine): void;
  /** Ask one approval; resolves "deny" when the signal aborts. Input typed before it is ignored. */
  ask(view: ApprovalView, signal: AbortSignal): Promise<ApprovalAnswer>;
  /**
   * Let the person choose one of `view.rows` (Up/Down and Enter on a terminal, the row's number
   * as the next line otherwise): its index, or undefined when dismissed (Esc, an empty or
   * unknown answer, the input closing) or when the signal aborts.
   */
  pick(view: PickView, signal: AbortSignal): Promise<number | undefined>;
  footer(status: FooterStatus): void;
}

/** The colours lines.ts uses (cli/style.ts's Style has this shape; none when colour is off). */
export interface UiStyle {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/**
 * How a line typed at an approval prompt is read: only `y`/`yes`, `s`/`session` and, where it is
 * offered, `p`/`prefix` allow; any other line denies.
 */
export function approvalAnswerOf(typed: string, prefix = false): ApprovalAnswer {
  const text = typed.trim().toLowerCase();
  if (text === "y" || text === "yes") return "once";
  if (text === "s" || text === "session") return "session";
  if (prefix && (text === "p" || text === "prefix")) return "prefix";
  return "deny";
}

/**
 * What one key pressed at an approval question answers on a terminal, or undefined for a key
 * that answers nothing (it is ignored: the question owns the input while it shows).
 */
export function approvalKeyOf(key: string, prefix: boolean): ApprovalAnswer | undefined {
  switch (key) {
    case "y":
    case "Y":
      return "once";
    case "s":
    case "S":
      return "session";
    case "p":
    case "P":
      return prefix ? "prefix" : undefined;
    case "n":
    case "N":
      return "deny";
    default:
      return undefined;
  }
}
