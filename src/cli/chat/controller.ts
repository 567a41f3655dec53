import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { EngineListener, RunSummary, TurnAttachments } from "../../engine/options.js";
import { type LiveExport, liveExport, withLiveExport } from "../../otel/enabled.js";
import { costUsd } from "../../providers/cost.js";
import { expandCommandLine } from "../../session/extensions/commands.js";
import type { Extensions } from "../../session/extensions/discover.js";
import { readInputImage } from "../../session/extensions/input-image.js";
import type { CommandResult, SessionHandle, Turn } from "../../session/handle.js";
import { harnessVersion } from "../../session/version.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { isImagePath } from "../../tools/files/image.js";
import { agentRecordLine } from "../../ui/agent-lines.js";
import { checkOutputLines } from "../../ui/call-lines.js";
import { callTag, note, own, quoted, toolDone, toolLabel } from "../../ui/lines.js";
import { OutputTail } from "../../ui/output-tail.js";
import type { ChatUi, FooterStatus, UiStyle } from "../../ui/ui.js";
import type { CallShow } from "../call-show.js";
import { type AttachmentSource, expandAttachments } from "./attachments.js";
import { BUILTIN_COMMANDS, runSlash } from "./slash.js";

/**
 * The chat's loop: input between turns starts the next turn (or runs a slash command), input
 * during a turn steers it, Esc interrupts it, and the journal's records and the model's stream
 * become what the UI shows. Resolves when the person leaves; a running turn is interrupted and
 * waited for first, so the journal is left at a safe point.
 */
export class ChatController {
  readonly #ui: ChatUi;
  readonly #session: SessionHandle;
  readonly #style: UiStyle;
  /** Where `@path` files are read from (none: `@` is plain text). */
  readonly #attachments: AttachmentSource | undefined;
  #turn: Turn | undefined;
  #footer: FooterStatus;
  #exit: (() => void) | undefined;
  #leaving = false;
  /** A slash command running (/compact, /fork use the journal). */
  #slash: Promise<void> | undefined;
  /** Steers typed as a turn was ending, input typed during a slash command: handled in order. */
  readonly #queued: string[] = [];

  /** What the replies so far cost, at the prices of the model that gave each (only with prices). */
  #costUsd: number | undefined;
  /** The output so far of each running call that produces some (a shell command). */
  readonly #outputs = new Map<string, OutputTail>();
  /** `!!command` outputs waiting for the next message the person sends. */
  readonly #shared: string[] = [];
  /** Calls started in this chat: each gets the next number for its tag. */
  #calls = 0;
  /** Aborted when the person leaves: a picker a slash command opened closes. */
  readonly #leaving$ = new AbortController();

  /** Command templates for `/NAME args`. */
  readonly #commands: Pick<Extensions, "commands"> | undefined;

  /** Where the lines after the chat go (the terminal, once the UI has stopped). */
  readonly #print: (text: string) => void;
  /** Shows each finished call's diff and command output (absent with --quiet-calls). */
  readonly #show: CallShow | undefined;

  #live: LiveExport | undefined;

  constructor(
    ui: ChatUi,
    session: SessionHandle,
    style: UiStyle,
    options: {
      attachments?: AttachmentSource | undefined;
      show?: CallShow | undefined;
      print?: (text: string) => void;
      /** Command templates `/NAME args` expands (the session's, with their trust). */
      commands?: Pick<Extensions, "commands"> | undefined;
    } = {},
  ) {
    this.#commands = options.commands;
    this.#print = options.print ?? ((text) => void process.stdout.write(text));
    this.#ui = ui;
    this.#session = session;
    this.#style = style;
    this.#attachments = options.attachments;
    this.#show = options.show;
    this.#footer = { model: session.model, inputTokens: 0, outputTokens: 0, running: false };
  }

  /** Run until the person leaves; resolves with the exit code. */
  async run(): Promise<number> {
    // OpenTelemetry, only when an endpoint is configured (the SDK is not even loaded otherwise).
    this.#live = await liveExport(this.#session.sessionId, harnessVersion());
    const left = new Promise<void>((resolve) => {
      this.#exit = resolve;
    });
    this.#ui.start({
      submit: (text) => this.#submit(text),
      interrupt: () => this.#interrupt(),
      exit: () => void this.#leave(),
    });
    this.#ui.line(
      own(
        this.#style,
        "dim",
        `harness chat · session ${this.#session.sessionId} · /help for keys and commands`,
      ),
    );
    this.#ui.footer(this.#footer);
    return left.then(async () => {
      await this.#session.close();
      await this.#live?.shutdown();
      await this.#ui.stop();
      // After the UI is gone, as plain lines the terminal wraps itself: which session this was and
      // the command that goes on with it, to copy whole.
      const next = this.#session.continueCommand();
      this.#print(
        next === undefined
          ? "harness chat: nothing was recorded (no message was sent)\n"
          : `harness chat: session ${escapeForTerminal(this.#session.sessionId)}\ncontinue it with: ${escapeForTerminal(next)}\n`,
      );
      return 0;
    });
  }

  async #submit(text: string): Promise<void> {
    if (this.#leaving) return;
    if (this.#slash !== undefined) {
      // One thing at a time on the journal: what comes during a slash command waits for it.
      this.#queued.push(text);
      return;
    }
    const turn = this.#turn;
    // A pasted image path, or /image PATH [message]; then a command template; then the built-ins.
    const attached = await this.#imageOrCommand(text);
    if (attached === "handled") return;
    if (attached !== undefined) {
      if (turn !== undefined) {
        this.#ui.line(
          note(this.#style, "warn", "images and commands start a turn: wait for this one or press Esc"),
        );
        return;
      }
      this.#ui.line(note(this.#style, "dim", "› ", text));
      await this.#runTurn(attached.text, attached.attachments);
      return;
    }
    if (text.startsWith("/")) {
      this.#ui.line(note(this.#style, "dim", "› ", text));
      this.#slash = runSlash(text, {
        ui: this.#ui,
        style: this.#style,
        session: this.#session,
        running: turn !== undefined,
        leave: () => void this.#leave(),
        listener: this.#listener(),
        signal: this.#leaving$.signal,
      });
      await this.#slash;
      this.#slash = undefined;
      // /model may have switched it.
      if (this.#footer.model !== this.#session.model) this.#setFooter({ model: this.#session.model });
      const next = this.#queued.shift();
      if (next !== undefined && !this.#leaving) await this.#submit(next);
      return;
    }
    if (text.startsWith("!")) {
      await this.#command(text, turn !== undefined);
      return;
    }
    const message = await this.#attach(text);
    if (message === undefined) return;
    if (turn !== undefined) {
      this.#ui.line(note(this.#style, "warn", "↳ steer: ", text));
      try {
        await turn.steer(message);
        this.#ui.line(own(this.#style, "dim", "  (delivered at the next step, after the running calls)"));
      } catch {
        // The turn is already ending: what was typed starts the next one instead of being lost.
        this.#queued.push(text);
        this.#ui.line(own(this.#style, "dim", "  (the turn is ending: this will be your next message)"));
      }
      return;
    }
    await this.#runTurn(message);
  }

  /**
   * The message with its `@path` files attached (attachments.ts), each named in a line; or,
   * when one cannot be attached, undefined and why: nothing is sent, the person fixes the path.
   */
  async #attach(text: string): Promise<string | undefined> {
    if (this.#attachments === undefined || !text.includes("@")) {
      if (this.#turn === undefined) this.#ui.line(note(this.#style, "plain", "› ", text));
      return text;
    }
    const expanded = await expandAttachments(text, this.#attachments);
    if (!expanded.ok) {
      this.#ui.line(note(this.#style, "dim", "› ", text));
      for (const problem of expanded.problems)
        this.#ui.line(note(this.#style, "error", "✗ not sent: ", problem));
      return undefined;
    }
    if (this.#turn === undefined) this.#ui.line(note(this.#style, "plain", "› ", text));
    for (const file of expanded.attached)
      this.#ui.line(note(this.#style, "dim", "  + attached ", file.path, ` (${file.bytes} bytes)`));
    return expanded.text;
  }

  /**
   * `!command` / `!!command`: the person's own shell command, between turns only (during a turn
   * it would race the model's calls on the journal and the workspace: they are told to wait).
   * Runs like a slash command, so input typed meanwhile waits for it.
   */
  async #command(text: string, running: boolean): Promise<void> {
    const share = text.startsWith("!!");
    const command = text.slice(share ? 2 : 1).trim();
    this.#ui.line(note(this.#style, "dim", "› ", text));
    if (command === "") {
      this.#ui.line(
        own(
          this.#style,
          "warn",
          "usage: !command runs it here; !!command also sends it and its output with your next message",
        ),
      );
      return;
    }
    if (running) {
      this.#ui.line(
        own(
          this.#style,
          "warn",
          "a !command runs between turns: wait for the turn to end (Esc interrupts it), then type it again",
        ),
      );
      return;
    }
    if (!this.#session.started) {
      this.#ui.line(
        own(this.#style, "warn", "!commands run in the session: send a first message to start it"),
      );
      return;
    }
    const run = this.#session.runCommand(command, share, this.#listener()).then(
      (result) => this.#showCommand(command, share, result),
      (error: unknown) => {
        this.#ui.line(note(this.#style, "error", "✗ ", messageOf(error)));
      },
    );
    this.#slash = run;
    await run;
    this.#slash = undefined;
    const next = this.#queued.shift();
    if (next !== undefined && !this.#leaving) await this.#submit(next);
  }

  /** A `!command`'s output, head and tail, escaped; kept for the next message when shared. */
  #showCommand(command: string, share: boolean, result: CommandResult): void {
    const output = result.content.replace(/\n+$/, "");
    if (result.status !== "ok" && output === "") {
      this.#ui.line(note(this.#style, "error", "  ✗ ", result.summary));
    }
    // With call output on, the call's own lines (status, stdout and stderr) already showed it.
    if (this.#show?.showsOutput !== true)
      for (const line of quoted(this.#style, headAndTail(output))) this.#ui.line(line);
    if (share && result.status !== "denied") {
      this.#shared.push(`I ran \`${command}\` (${result.status}):\n${output}`);
      this.#ui.line(
        own(this.#style, "dim", "  (this command and its output go to the model with your next message)"),
      );
    } else {
      this.#ui.line(
        own(this.#style, "dim", "  (not sent to the model; !!command sends it with your next message)"),
      );
    }
  }

  /**
   * What a line brings besides text: an image (a pasted path to an image file, or `/image PATH
   * [message]`) or a command template (`/NAME args`, unless NAME is a built-in command). Undefined:
   * a plain message or a built-in; "handled": refused, and said so.
   */
  async #imageOrCommand(
    text: string,
  ): Promise<{ text: string; attachments: TurnAttachments } | "handled" | undefined> {
    const trimmed = text.trim();
    const warn = (line: string) => {
      this.#ui.line(note(this.#style, "warn", "", line));
      return "handled" as const;
    };
    const image = imageRequest(trimmed);
    if (image !== undefined) {
      if (image.path === "") return warn("/image PATH [message]: which image file?");
      try {
        const read = await readInputImage(image.path);
        return {
          text: image.message === "" ? `[image ${image.path}]` : image.message,
          attachments: { images: [read] },
        };
      } catch (error) {
        return warn(messageOf(error));
      }
    }
    if (!trimmed.startsWith("/") || this.#commands === undefined) return undefined;
    const name = trimmed.split(/\s/, 1)[0]!;
    if (BUILTIN_COMMANDS.has(name)) return undefined;
    const found = expandCommandLine(trimmed, this.#commands);
    if (found.kind === "none") return undefined;
    if (found.kind === "refused") return warn(found.message);
    this.#ui.line(
      own(this.#style, "dim", `  (${name} expanded from ${found.expanded.command.source}'s template)`),
    );
    return { text: found.expanded.text, attachments: { command: found.expanded.command } };
  }

  async #runTurn(message: string, attachments?: TurnAttachments): Promise<void> {
    // `!!command` outputs go first, as part of what the person sends (recorded in user.input).
    const input = this.#shared.length > 0 ? [...this.#shared.splice(0), message].join("\n\n") : message;
    const turn = this.#session.turn(input, this.#listener(), attachments);
    this.#turn = turn;
    this.#setFooter({ running: true });
    try {
      this.#showEnd(await turn.done);
    } catch (error) {
      this.#ui.endModelText();
      this.#ui.line(note(this.#style, "error", "✗ ", messageOf(error)));
    } finally {
      this.#turn = undefined;
      this.#setFooter({ running: false });
    }
    const next = this.#queued.shift();
    if (next !== undefined && !this.#leaving) await this.#submit(next);
  }

  #interrupt(): void {
    if (this.#turn === undefined) return;
    this.#ui.line(own(this.#style, "warn", "interrupting: the turn stops at the next safe point"));
    this.#turn.interrupt();
  }

  async #leave(): Promise<void> {
    if (this.#leaving) return;
    this.#leaving = true;
    this.#leaving$.abort();
    const turn = this.#turn;
    if (turn !== undefined) {
      turn.interrupt();
      await turn.done.catch(() => undefined);
    }
    await this.#slash;
    this.#exit?.();
  }

  #showEnd(summary: RunSummary): void {
    this.#ui.endModelText();
    const tone =
      summary.status === "verified"
        ? "ok"
        : summary.status === "unverified" || summary.status === "needs_review"
          ? "dim"
          : "warn";
    const why = summary.reason ? ` (${summary.reason})` : "";
    this.#ui.line(note(this.#style, tone, `— ${summary.status}`, why));
    if (summary.message) for (const line of quoted(this.#style, summary.message)) this.#ui.line(line);
  }

  #setFooter(change: Partial<FooterStatus>): void {
    this.#footer = { ...this.#footer, ...change };
    this.#ui.footer(this.#footer);
  }

  /** What the UI shows of a turn: streamed text, live calls, and the records people need to see. */
  #listener(): EngineListener {
    return withLiveExport(this.#uiListener(), this.#live);
  }

  #uiListener(): EngineListener {
    const style = this.#style;
    return {
      stream: (event) => {
        if (event.type === "text_delta" && event.text.length > 0) this.#ui.modelText(event.text);
        if (event.type === "end") this.#ui.endModelText();
      },
      toolOutput: (callId, text) => {
        let tail = this.#outputs.get(callId);
        if (tail === undefined) {
          tail = new OutputTail();
          this.#outputs.set(callId, tail);
        }
        tail.append(text);
        this.#ui.toolOutput(callId, tail.lines(style));
      },
      // A sub-agent's progress while its agent call runs: its finished calls and its end.
      agentRecord: (path, record) => {
        const line = agentRecordLine(style, path, record);
        if (line !== undefined) this.#ui.line(line);
      },
      callFinished: (info) => {
        this.#outputs.delete(info.call_id);
        this.#ui.toolFinished(info.call_id, toolDone(style, info));
      },
      record: (record) => {
        for (const line of this.#show?.linesFor(record) ?? []) this.#ui.line(line);
        switch (record.type) {
          case "model.started":
            this.#setFooter({
              ...(record.data.estimated_input_tokens !== undefined
                ? { contextUsed: record.data.estimated_input_tokens }
                : {}),
              ...(record.data.context_window !== undefined
                ? { contextWindow: record.data.context_window }
                : {}),
            });
            break;
          case "model.reply": {
            const usage = record.data.usage;
            const prices = this.#session.prices;
            if (prices !== undefined && usage !== undefined) {
              this.#costUsd =
                (this.#costUsd ?? 0) +
                costUsd(
                  {
                    input_tokens: usage.input_tokens ?? 0,
                    output_tokens: usage.output_tokens ?? 0,
                    cached_tokens: usage.cached_tokens ?? 0,
                  },
                  prices,
                );
            }
            this.#setFooter({
              inputTokens: this.#footer.inputTokens + (usage?.input_tokens ?? 0),
              outputTokens: this.#footer.outputTokens + (usage?.output_tokens ?? 0),
              ...(this.#costUsd !== undefined ? { costUsd: this.#costUsd } : {}),
            });
            break;
          }
          case "tool.started":
            this.#calls += 1;
            this.#ui.toolStarted(
              record.data.call_id,
              toolLabel(style, record.data.name, record.data.arguments),
              callTag(style, record.data.name, this.#calls),
            );
            break;
          case "model.retryable_error":
            this.#ui.line(
              note(
                style,
                "warn",
                `  ↻ ${record.data.code}: `,
                record.data.message,
                ` (retry in ${record.data.retry_in_ms} ms)`,
              ),
            );
            break;
          case "model.failed":
            this.#ui.line(
              note(style, "error", `  ✗ model failed: ${record.data.code}: `, record.data.message),
            );
            break;
          case "model.protocol_error":
            this.#ui.line(
              note(
                style,
                "error",
                "  ✗ protocol error: ",
                record.data.error,
                "; nothing from this reply runs",
              ),
            );
            break;
          case "acceptance.checked":
            for (const check of record.data.checks) {
              this.#ui.line(
                note(
                  style,
                  check.passed ? "ok" : "error",
                  `${check.passed ? "✓" : "✗"} acceptance: `,
                  check.name,
                ),
              );
              if (!check.passed)
                for (const line of checkOutputLines(style, check.output)) this.#ui.line(line);
            }
            break;
          case "context.compacted":
            this.#ui.line(own(style, "dim", "  (older turns were summarized to fit the context window)"));
            break;
          default:
            break;
        }
      },
    };
  }
}

/** Lines kept from each end of a `!command`'s output on screen (the journal has all of it). */
const COMMAND_LINES = 12;

/** The first and last lines of a long output, with how many were left out between them. */
export function headAndTail(text: string, keep = COMMAND_LINES): string {
  const lines = text.split("\n");
  if (lines.length <= keep * 2) return text;
  const hidden = lines.length - keep * 2;
  return [...lines.slice(0, keep), `… ${hidden} more line(s) …`, ...lines.slice(-keep)].join("\n");
}

/** An error's message, raw: lines.ts escapes it where it is shown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * `/image PATH [message]`, or a line that is only a path to an existing image file (as a
 * terminal pastes a dropped file: possibly quoted, `~` for home).
 */
function imageRequest(text: string): { path: string; message: string } | undefined {
  const explicit = /^\/image(?:\s+("[^"]+"|'[^']+'|\S+))?(?:\s+([\s\S]*))?$/.exec(text);
  if (explicit !== null) {
    if (explicit[1] === undefined) return { path: "", message: "" };
    return { path: hostPath(explicit[1]), message: (explicit[2] ?? "").trim() };
  }
  const pasted = hostPath(text);
  if (!/\s/.test(pasted) && isImagePath(pasted) && existsSync(pasted)) return { path: pasted, message: "" };
  return undefined;
}

function hostPath(raw: string): string {
  const unquoted = /^(["']).*\1$/.test(raw) ? raw.slice(1, -1) : raw;
  return unquoted.startsWith("~/") ? join(homedir(), unquoted.slice(2)) : unquoted;
}
