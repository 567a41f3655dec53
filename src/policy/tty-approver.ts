import type { Readable, Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../runtime/ports.js";
import { approvalChoices, collapseSpaceRuns, longCommandNote } from "../shared/approval-text.js";
import { escapeForTerminal, jsonForTerminal } from "../shared/terminal-text.js";

export interface TtyApproverOptions {
  /** How long to wait for an answer before denying. Default 5 minutes. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 300_000;

type Answer =
  | { kind: "line"; line: string }
  | { kind: "key"; answer: "once" | "session" | "prefix" | "deny" }
  | { kind: "interrupt" }
  | { kind: "eof" }
  | { kind: "error" }
  | { kind: "timeout" }
  | { kind: "aborted" };

/**
 * Asks a person at a terminal. On a real terminal (a TTY input) one key answers, as in the chat:
 * `y` once, `s` the same tool + subject for the rest of the session, `p` the offered command
 * prefix for the session, `n` or Esc denies, Ctrl-C denies and interrupts the run (the key is
 * passed on as SIGINT), Ctrl-D denies; any other key is ignored. From a pipe, a line answers:
 * `y`/`yes`, `s`/`session`, `p`/`prefix` (case-insensitive, blanks ignored), every other line
 * denies. EOF, an input error, a timeout or cancellation deny. Input typed before the prompt
 * appeared is discarded so it cannot approve an action nobody saw.
 */
export class TtyApprover implements ApprovalPort {
  readonly #input: Readable;
  readonly #output: Writable;
  readonly #timeoutMs: number;
  readonly #decoder = new StringDecoder("utf8");
  #queue: Promise<unknown> = Promise.resolve();
  #ended = false;
  #failed = false;

  constructor(input: Readable, output: Writable, options: TtyApproverOptions = {}) {
    this.#input = input;
    this.#output = output;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // Remember EOF and errors that happen while no prompt is open.
    input.once("end", () => {
      this.#ended = true;
    });
    input.on("error", () => {
      this.#failed = true;
    });
  }

  /** Prompts one at a time: concurrent asks queue behind each other. */
  request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const next = this.#queue.then(() => this.#ask(request, signal));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #ask(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    if (signal.aborted) return denied("cancelled before the prompt was shown");
    this.#discardTypeAhead();
    this.#output.write(renderPrompt(request));
    const raw = rawTerminal(this.#input);
    const answer = raw
      ? await this.#readKey(raw, signal, request.pattern !== undefined)
      : await this.#readLine(signal);
    const decision = decide(answer, request.pattern);
    this.#output.write(`${answerLine(decision)}\n`);
    if (answer.kind === "interrupt") process.kill(process.pid, "SIGINT");
    return decision;
  }

  /** One key in raw mode: only the answer keys answer; the terminal's mode is put back after. */
  #readKey(input: RawTerminal, signal: AbortSignal, prefix: boolean): Promise<Answer> {
    if (this.#failed || input.errored) return Promise.resolve({ kind: "error" });
    if (this.#ended || input.readableEnded || input.destroyed) return Promise.resolve({ kind: "eof" });
    const wasRaw = input.isRaw;
    input.setRawMode(true);
    return this.#listen(
      input,
      signal,
      (text) => keyAnswer(text, prefix),
      () => input.setRawMode(wasRaw),
    );
  }

  #discardTypeAhead(): void {
    if (this.#input.readableFlowing === true) return;
    while (this.#input.read() !== null) {
      // dropped on purpose
    }
    this.#decoder.end();
  }

  #readLine(signal: AbortSignal): Promise<Answer> {
    if (this.#failed || this.#input.errored) return Promise.resolve({ kind: "error" });
    if (this.#ended || this.#input.readableEnded || this.#input.destroyed)
      return Promise.resolve({ kind: "eof" });
    let buffered = "";
    return this.#listen(this.#input, signal, (text) => {
      buffered += text;
      const newline = buffered.indexOf("\n");
      return newline === -1 ? undefined : { kind: "line", line: buffered.slice(0, newline) };
    });
  }

  /**
   * Read `input` until `onText` (given each decoded chunk) answers, or the stream ends or fails,
   * the signal aborts or the timeout passes; every listener is removed and the stream paused
   * before the answer is returned (`restore` runs first, e.g. to leave raw mode).
   */
  #listen(
    input: Readable,
    signal: AbortSignal,
    onText: (text: string) => Answer | undefined,
    restore?: () => void,
  ): Promise<Answer> {
    return new Promise<Answer>((resolve) => {
      const finish = (answer: Answer): void => {
        clearTimeout(timer);
        input.off("data", onData);
        input.off("end", onEnd);
        input.off("close", onEnd);
        input.off("error", onError);
        signal.removeEventListener("abort", onAbort);
        restore?.();
        input.pause();
        resolve(answer);
      };
      const onData = (chunk: Buffer | string): void => {
        const answer = onText(typeof chunk === "string" ? chunk : this.#decoder.write(chunk));
        if (answer !== undefined) finish(answer);
      };
      const onEnd = (): void => finish({ kind: "eof" });
      const onError = (): void => finish({ kind: "error" });
      const onAbort = (): void => finish({ kind: "aborted" });
      const timer = setTimeout(() => finish({ kind: "timeout" }), this.#timeoutMs);
      input.on("data", onData);
      input.once("end", onEnd);
      input.once("close", onEnd);
      input.once("error", onError);
      signal.addEventListener("abort", onAbort, { once: true });
      input.resume();
    });
  }
}

/** A terminal stream that can be put in raw mode (a TTY). */
type RawTerminal = Readable & { isRaw: boolean; setRawMode(raw: boolean): unknown };

function rawTerminal(input: Readable): RawTerminal | undefined {
  const tty = input as Partial<RawTerminal> & { isTTY?: boolean };
  return tty.isTTY === true && typeof tty.setRawMode === "function" ? (input as RawTerminal) : undefined;
}

/**
 * What a chunk of raw input answers: a chunk of one key only (a paste or a burst of typing is
 * several characters at once and answers nothing).
 */
function keyAnswer(text: string, prefix: boolean): Answer | undefined {
  if (text === "\x03") return { kind: "interrupt" };
  if (text === "\x04") return { kind: "eof" };
  if (text === "\x1b") return { kind: "key", answer: "deny" };
  switch (text) {
    case "y":
    case "Y":
      return { kind: "key", answer: "once" };
    case "s":
    case "S":
      return { kind: "key", answer: "session" };
    case "p":
    case "P":
      return prefix ? { kind: "key", answer: "prefix" } : undefined;
    case "n":
    case "N":
      return { kind: "key", answer: "deny" };
    default:
      return undefined;
  }
}

function answerLine(decision: ApprovalDecision): string {
  if (decision.decision !== "allow") return "denied";
  if (decision.pattern !== undefined) return `approved (session: ${escapeForTerminal(decision.pattern)})`;
  return `approved (${decision.scope})`;
}

function decide(answer: Answer, pattern: string | undefined): ApprovalDecision {
  switch (answer.kind) {
    case "line": {
      const text = answer.line.trim().toLowerCase();
      if (text === "y" || text === "yes") return { decision: "allow", scope: "once", by: "user" };
      if (text === "s" || text === "session") return { decision: "allow", scope: "session", by: "user" };
      if (pattern !== undefined && (text === "p" || text === "prefix"))
        return { decision: "allow", scope: "session", by: "user", pattern };
      return denied("the user did not approve");
    }
    case "key":
      if (answer.answer === "once") return { decision: "allow", scope: "once", by: "user" };
      if (answer.answer === "session") return { decision: "allow", scope: "session", by: "user" };
      if (answer.answer === "prefix" && pattern !== undefined)
        return { decision: "allow", scope: "session", by: "user", pattern };
      return denied("the user did not approve");
    case "interrupt":
      return denied("interrupted at the question");
    case "eof":
      return denied("input closed before an answer");
    case "error":
      return denied("the terminal input failed");
    case "timeout":
      return denied("no answer in time");
    case "aborted":
      return denied("cancelled while waiting for an answer");
  }
}

function denied(reason: string): ApprovalDecision {
  return { decision: "deny", scope: "once", by: "user", reason };
}

/**
 * The prompt text. Every value from the model (tool name, command, arguments, grant subject) is
 * escaped on one line, so it can neither drive the terminal nor add a line of its own.
 */
export function renderPrompt(request: ApprovalRequest): string {
  const lines = ["", `Approval needed: ${escapeForTerminal(request.tool)} (${request.effect})`];
  const display = request.display;
  const command =
    display?.command === undefined ? undefined : collapseSpaceRuns(escapeForTerminal(display.command));
  if (command !== undefined) lines.push(`  command: ${command}`);
  if (display?.cwd !== undefined) lines.push(`  cwd:     ${escapeForTerminal(display.cwd)}`);
  if (display?.timeoutMs !== undefined) lines.push(`  timeout: ${display.timeoutMs} ms`);
  if (display?.sandbox !== undefined) lines.push(`  sandbox: ${escapeForTerminal(display.sandbox)}`);
  for (const [label, value] of Object.entries(display?.details ?? {})) {
    lines.push(`  ${escapeForTerminal(label)}: ${escapeForTerminal(value)}`);
  }
  if (request.reason !== undefined) lines.push(`  why:     ${escapeForTerminal(request.reason)}`);
  // A command is shown once, above: its arguments again as JSON would only repeat it.
  if (command === undefined) {
    lines.push(
      `  arguments: ${collapseSpaceRuns(jsonForTerminal(request.arguments, 2)).split("\n").join("\n  ")}`,
    );
  }
  const note = command === undefined ? undefined : longCommandNote(command);
  if (note !== undefined) lines.push(`  note:    ${note}`);
  const choices = approvalChoices(request);
  const prefix = choices.prefix === undefined ? "" : ` · [p] session: ${choices.prefix}`;
  lines.push(`Allow? [y] once · [s] session: ${choices.exact}${prefix} · [n] or Esc denies `);
  return lines.join("\n");
}
