import type { Readable, Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { escapeForTerminal } from "../shared/terminal-text.js";
import { footerLine, MODEL_PREFIX } from "./lines.js";
import {
  type ApprovalAnswer,
  type ApprovalView,
  answerText,
  approvalAnswerOf,
  type ChatHandlers,
  type ChatLine,
  type ChatUi,
  type FooterStatus,
  type PickView,
  type UiStyle,
} from "./ui.js";

/**
 * How often a running call's new output lines are printed at most, and how long after its first
 * output: a command that is done sooner shows only its result line, as in the full-screen chat.
 */
export const LIVE_OUTPUT_EVERY_MS = 500;

/** The answer line is printed without colour, as before (a script reads it). */
const PLAIN: UiStyle = {
  bold: (text) => text,
  dim: (text) => text,
  red: (text) => text,
  green: (text) => text,
  yellow: (text) => text,
  cyan: (text) => text,
};

/** A running call's live output: the lines last printed, the latest ones, the pending print. */
interface LiveOutput {
  shown: readonly string[];
  latest: readonly ChatLine[];
  timer: NodeJS.Timeout | undefined;
  printedAt: number;
}

/**
 * The chat as plain lines, for when stdin or stdout is not a terminal (a pipe, a script, a CI
 * log). Input is read as lines in order: a line answers the open approval question, or waits
 * while the previous message is handled (a question its turn asks takes the next waiting line)
 * and is the next message once it has been. So a script can pipe in prompts and answers; only `y`/`s`
 * (and `p` where a prefix is offered) lines approve. The input closing leaves the chat once every waiting line is done. Nothing is
 * redrawn: a call prints a line when it starts and when it ends, the footer after each turn, and
 * a running command's output lines (the ones the full-screen chat shows under its live line,
 * already escaped) as they come, each line once, at most every LIVE_OUTPUT_EVERY_MS. Every line
 * of a call starts with its tag (`[shell#2]`), so the lines of calls that run at once, mixed in
 * the order they came, still say whose they are.
 */
export class LineUi implements ChatUi {
  readonly #input: Readable;
  readonly #output: Writable;
  readonly #style: UiStyle;
  readonly #decoder = new StringDecoder("utf8");
  readonly #waiting: string[] = [];
  #handlers: ChatHandlers | undefined;
  #buffered = "";
  #midLine = false;
  #pending: ((line: string | undefined) => void) | undefined;
  #running = false;
  /** A message is being handled (its turn runs): lines wait, except as answers to its questions. */
  #busy = false;
  #ended = false;
  #started = false;
  readonly #live = new Map<string, LiveOutput>();
  /** Each running call's tag, set on every line printed for it. */
  readonly #tags = new Map<string, string>();

  constructor(input: Readable, output: Writable, style: UiStyle) {
    this.#input = input;
    this.#output = output;
    this.#style = style;
  }

  start(handlers: ChatHandlers): void {
    this.#handlers = handlers;
    this.#started = true;
    this.#input.on("data", this.#onData);
    this.#input.once("end", this.#onEnd);
    this.#input.once("error", this.#onEnd);
  }

  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    this.#input.off("data", this.#onData);
    this.#input.off("end", this.#onEnd);
    this.#input.off("error", this.#onEnd);
    this.#endLine();
    for (const id of [...this.#live.keys()]) this.#endLive(id);
    this.#pending?.(undefined);
    // Stop reading so a pipe left open does not keep the process alive.
    this.#input.pause();
    if ("unref" in this.#input && typeof this.#input.unref === "function") this.#input.unref();
  }

  readonly #onData = (chunk: Buffer | string): void => {
    this.#buffered += typeof chunk === "string" ? chunk : this.#decoder.write(chunk);
    for (let newline = this.#buffered.indexOf("\n"); newline !== -1; newline = this.#buffered.indexOf("\n")) {
      const line = this.#buffered.slice(0, newline).replace(/\r$/, "");
      this.#buffered = this.#buffered.slice(newline + 1);
      this.#onLine(line);
    }
  };

  readonly #onEnd = (): void => {
    const rest = this.#buffered;
    this.#buffered = "";
    if (rest !== "") this.#onLine(rest);
    this.#ended = true;
    this.#pending?.(undefined);
    this.#next();
  };

  #onLine(line: string): void {
    const pending = this.#pending;
    if (pending) {
      pending(line);
      return;
    }
    this.#waiting.push(line);
    this.#next();
  }

  /** When the last message has been handled: the next waiting line; none left after the end: leave. */
  #next(): void {
    if (this.#busy || this.#pending !== undefined || !this.#started) return;
    const line = this.#waiting.shift();
    if (line === undefined) {
      if (this.#ended) this.#handlers?.exit();
      return;
    }
    if (line.trim() === "") {
      this.#next();
      return;
    }
    this.#busy = true;
    void Promise.resolve(this.#handlers?.submit(line))
      .catch(() => undefined)
      .finally(() => {
        this.#busy = false;
        this.#next();
      });
  }

  modelText(delta: string): void {
    const pieces = delta.split("\n");
    pieces.forEach((piece, index) => {
      if (index > 0) {
        if (!this.#midLine) this.#output.write(this.#style.dim(MODEL_PREFIX));
        this.#output.write("\n");
        this.#midLine = false;
      }
      if (piece === "") return;
      // A piece may continue a line already started: the prefix only opens a line.
      if (!this.#midLine) this.#output.write(this.#style.dim(MODEL_PREFIX));
      this.#output.write(this.#style.cyan(escapeForTerminal(piece)));
      this.#midLine = true;
    });
  }

  endModelText(): void {
    this.#endLine();
  }

  line(line: ChatLine): void {
    this.#endLine();
    this.#output.write(`${line.text}\n`);
  }

  toolStarted(id: string, label: ChatLine, tag: ChatLine): void {
    this.#tags.set(id, tag.text);
    this.line({ text: `${tag.text} … ${label.text}` });
  }

  toolOutput(id: string, lines: readonly ChatLine[]): void {
    let live = this.#live.get(id);
    if (live === undefined) {
      live = { shown: [], latest: lines, timer: undefined, printedAt: Date.now() };
      this.#live.set(id, live);
    }
    live.latest = lines;
    if (live.timer !== undefined) return;
    const wait = Math.max(0, live.printedAt + LIVE_OUTPUT_EVERY_MS - Date.now());
    live.timer = setTimeout(() => this.#printLive(id), wait);
    live.timer.unref();
  }

  toolFinished(id: string, line: ChatLine): void {
    // Output not printed yet is in the call's result; the finished line carries the outcome.
    this.#endLive(id);
    const tag = this.#tags.get(id);
    this.#tags.delete(id);
    this.line({ text: tag === undefined ? line.text : `${tag} ${line.text}` });
  }

  /** The latest lines not printed yet: plain lines are never redrawn, so each is printed once. */
  #printLive(id: string): void {
    const live = this.#live.get(id);
    if (live === undefined) return;
    live.timer = undefined;
    live.printedAt = Date.now();
    const latest = live.latest.map((line) => line.text);
    const fresh = latest.slice(overlap(live.shown, latest));
    live.shown = latest;
    // The output lines are indented under the prefix already: the tag goes in front of the indent.
    const tag = this.#tags.get(id) ?? "";
    for (const text of fresh) this.line({ text: `${tag}${text}` });
  }

  #endLive(id: string): void {
    const timer = this.#live.get(id)?.timer;
    if (timer !== undefined) clearTimeout(timer);
    this.#live.delete(id);
  }

  ask(view: ApprovalView, signal: AbortSignal): Promise<ApprovalAnswer> {
    if (signal.aborted || !this.#started) return Promise.resolve("deny");
    for (const line of view.lines) this.line(line);
    this.#endLine();
    this.#output.write(view.question.text);
    return new Promise<ApprovalAnswer>((resolve) => {
      const answer = (line: string | undefined) => {
        this.#pending = undefined;
        signal.removeEventListener("abort", onAbort);
        const decided = line === undefined ? "deny" : approvalAnswerOf(line, view.prefix !== undefined);
        this.#output.write(`${answerText(PLAIN, view, decided)}\n`);
        resolve(decided);
      };
      const onAbort = () => answer(undefined);
      signal.addEventListener("abort", onAbort, { once: true });
      const waiting = this.#waiting.shift();
      if (waiting !== undefined) answer(waiting);
      else if (this.#ended) answer(undefined);
      else this.#pending = answer;
    });
  }

  /** The rows numbered from 1; the next line is the number of the one chosen (anything else cancels). */
  pick(view: PickView, signal: AbortSignal): Promise<number | undefined> {
    if (signal.aborted || !this.#started) return Promise.resolve(undefined);
    this.line(view.title);
    const width = String(view.rows.length).length;
    for (const [index, row] of view.rows.entries())
      this.line({ text: `  ${String(index + 1).padStart(width)}  ${row.text}` });
    this.#output.write("number to pick (anything else cancels): ");
    return new Promise<number | undefined>((resolve) => {
      const answer = (line: string | undefined) => {
        this.#pending = undefined;
        signal.removeEventListener("abort", onAbort);
        const typed = line?.trim() ?? "";
        const index = /^[0-9]{1,6}$/.test(typed) ? Number(typed) - 1 : -1;
        const chosen = index >= 0 && index < view.rows.length ? index : undefined;
        this.#output.write(chosen === undefined ? "cancelled\n" : `${chosen + 1}\n`);
        resolve(chosen);
      };
      const onAbort = () => answer(undefined);
      signal.addEventListener("abort", onAbort, { once: true });
      const waiting = this.#waiting.shift();
      if (waiting !== undefined) answer(waiting);
      else if (this.#ended) answer(undefined);
      else this.#pending = answer;
    });
  }

  footer(status: FooterStatus): void {
    const ended = this.#running && !status.running;
    this.#running = status.running;
    // Printed when a turn ends: a line per turn, not per token.
    if (ended) this.line({ text: footerLine(this.#style, status) });
  }

  #endLine(): void {
    if (this.#midLine) this.#output.write("\n");
    this.#midLine = false;
  }
}

/** How many lines at the start of `latest` are the last ones of `shown` (already printed). */
function overlap(shown: readonly string[], latest: readonly string[]): number {
  for (let count = Math.min(shown.length, latest.length); count > 0; count--) {
    const tail = shown.slice(shown.length - count);
    if (tail.every((line, index) => line === latest[index])) return count;
  }
  return 0;
}
