import type { Readable, Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../runtime/ports.js";
import { collapseSpaceRuns, grantForQuestion, longCommandNote } from "../shared/approval-text.js";
import { escapeForTerminal, jsonForTerminal } from "../shared/terminal-text.js";

export interface TtyApproverOptions {
  /** How long to wait for an answer before denying. Default 5 minutes. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 300_000;

type Answer =
  | { kind: "line"; line: string }
  | { kind: "eof" }
  | { kind: "error" }
  | { kind: "timeout" }
  | { kind: "aborted" };

/**
 * Asks a person at a terminal. Only `y`/`yes` approves once and `s`/`session` approves the same
 * tool + subject for the rest of the session (case-insensitive, surrounding blanks ignored);
 * every other line, EOF, an input error, a timeout or cancellation denies. Input typed before
 * the prompt appeared is discarded so it cannot approve an action nobody saw.
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
    const answer = await this.#readLine(signal);
    const decision = decide(answer);
    this.#output.write(`${decision.decision === "allow" ? `approved (${decision.scope})` : "denied"}\n`);
    return decision;
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
    const input = this.#input;
    return new Promise<Answer>((resolve) => {
      let buffered = "";
      const finish = (answer: Answer): void => {
        clearTimeout(timer);
        input.off("data", onData);
        input.off("end", onEnd);
        input.off("close", onEnd);
        input.off("error", onError);
        signal.removeEventListener("abort", onAbort);
        input.pause();
        resolve(answer);
      };
      const onData = (chunk: Buffer | string): void => {
        buffered += typeof chunk === "string" ? chunk : this.#decoder.write(chunk);
        const newline = buffered.indexOf("\n");
        if (newline !== -1) finish({ kind: "line", line: buffered.slice(0, newline) });
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

function decide(answer: Answer): ApprovalDecision {
  switch (answer.kind) {
    case "line": {
      const text = answer.line.trim().toLowerCase();
      if (text === "y" || text === "yes") return { decision: "allow", scope: "once", by: "user" };
      if (text === "s" || text === "session") return { decision: "allow", scope: "session", by: "user" };
      return denied("the user did not approve");
    }
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
  lines.push(
    `  arguments: ${collapseSpaceRuns(jsonForTerminal(request.arguments, 2)).split("\n").join("\n  ")}`,
  );
  const note = command === undefined ? undefined : longCommandNote(command);
  if (note !== undefined) lines.push(`  note:    ${note}`);
  lines.push(
    `Allow? [y]es once, [s]ession for ${grantForQuestion(escapeForTerminal(request.tool), escapeForTerminal(grantLabel(request)))}, anything else denies: `,
  );
  return lines.join("\n");
}

function grantLabel(request: ApprovalRequest): string {
  if (request.subject.kind === "none") return `${request.tool} with exactly these arguments`;
  return `${request.tool}(${request.subject.value})`;
}
