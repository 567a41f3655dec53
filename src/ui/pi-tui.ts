import {
  Container,
  Editor,
  matchesKey,
  ProcessTerminal,
  SelectList,
  type Terminal,
  Text,
  TUI,
} from "@mariozechner/pi-tui";
import { footerLine, modelLine } from "./lines.js";
import { type FileLister, MentionCompletion } from "./mentions.js";
import {
  type ApprovalAnswer,
  type ApprovalView,
  answerText,
  approvalKeyOf,
  type ChatHandlers,
  type ChatLine,
  type ChatUi,
  type FooterStatus,
  type PickView,
  type UiStyle,
} from "./ui.js";

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/** Spinner frame interval; the timer runs only while a call is running. */
const FRAME_MS = 120;
/** Rows a picker shows at once (it scrolls). */
const PICK_VISIBLE = 12;
/** Two Ctrl-C within this long leave the chat. */
const DOUBLE_CTRL_C_MS = 2000;

export interface PiTuiOptions {
  /** The terminal to draw on (default: this process's stdin and stdout). Tests pass a headless one. */
  terminal?: Terminal;
  /**
   * An answer key pressed this soon after an approval question appears, or after another key, is
   * ignored, so a person typing a message when it pops up cannot answer a question nobody read.
   * Default 250 ms.
   */
  answerGuardMs?: number;
  now?(): number;
  /** The workspace's files, for completing `@path` in the editor (none: no completion). */
  files?: FileLister;
}

interface LiveCall {
  label: ChatLine;
  started: number;
  output: readonly ChatLine[];
  view: Text;
}

/**
 * The chat on a terminal, drawn by pi-tui: the conversation is written into the terminal's own
 * scrollback, and below it the live calls (spinner, elapsed time, a shell call's last output
 * lines), an open approval question, the input editor (multi-line with Shift-Enter or a trailing
 * backslash, bracketed paste, Up/Down history) and the footer. pi-tui redraws only lines that
 * changed, and nothing is redrawn while nothing happens (the spinner's timer runs only while a
 * call runs), so an idle chat costs no CPU.
 */
export class PiTui implements ChatUi {
  readonly #style: UiStyle;
  readonly #tui: TUI;
  readonly #history = new Container();
  readonly #live = new Container();
  readonly #question = new Text("", 0, 0);
  readonly #editor: Editor;
  readonly #footer = new Text("", 0, 0);
  readonly #calls = new Map<string, LiveCall>();
  readonly #guardMs: number;
  readonly #now: () => number;
  #handlers: ChatHandlers | undefined;
  #streaming: { raw: string; view: Text } | undefined;
  #asking: { resolve(answer: ApprovalAnswer): void; lastKeyAt: number; prefix: boolean } | undefined;
  /** An open picker: it has the focus and takes every key until it is answered or dismissed. */
  #picking: ((index: number | undefined) => void) | undefined;
  #running = false;
  #lastCtrlC = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;
  #started = false;

  constructor(style: UiStyle, options: PiTuiOptions = {}) {
    this.#style = style;
    this.#guardMs = options.answerGuardMs ?? 250;
    this.#now = options.now ?? (() => Date.now());
    this.#tui = new TUI(options.terminal ?? new ProcessTerminal());
    this.#editor = new Editor(this.#tui, {
      borderColor: (text) => style.dim(text),
      selectList: {
        selectedPrefix: (text) => text,
        selectedText: (text) => style.bold(text),
        description: (text) => style.dim(text),
        scrollInfo: (text) => style.dim(text),
        noMatch: (text) => style.dim(text),
      },
    });
    if (options.files !== undefined)
      this.#editor.setAutocompleteProvider(new MentionCompletion(options.files));
    this.#editor.onSubmit = (text) => {
      if (text.trim() === "") return;
      this.#editor.addToHistory(text);
      void this.#handlers?.submit(text);
    };
    this.#tui.addChild(this.#history);
    this.#tui.addChild(this.#live);
    this.#tui.addChild(this.#question);
    this.#tui.addChild(this.#editor);
    this.#tui.addChild(this.#footer);
    this.#tui.setFocus(this.#editor);
    this.#tui.addInputListener((data) => this.#onKey(data));
  }

  start(handlers: ChatHandlers): void {
    this.#handlers = handlers;
    this.#started = true;
    this.#tui.start();
    this.#tui.requestRender();
  }

  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    this.#stopTimer();
    this.#asking?.resolve("deny");
    this.#asking = undefined;
    this.#picking?.(undefined);
    // The conversation stays in the scrollback; the editor, live lines and footer go, so the
    // shell's prompt follows the last line of the conversation.
    for (const part of [this.#live, this.#question, this.#editor, this.#footer]) this.#tui.removeChild(part);
    this.#tui.requestRender();
    await new Promise((resolve) => setTimeout(resolve, 50));
    this.#tui.stop();
  }

  /** Keys the chat itself handles; everything else goes to the editor. */
  #onKey(data: string): { consume: boolean } | undefined {
    if (this.#asking) return this.#answer(data);
    // The focused picker reads Up/Down, Enter, and Esc or Ctrl-C (dismiss).
    if (this.#picking) return undefined;
    if (matchesKey(data, "escape")) {
      if (this.#running) this.#handlers?.interrupt();
      return { consume: true };
    }
    if (matchesKey(data, "ctrl+c")) {
      const now = this.#now();
      if (this.#editor.getText() !== "") {
        // Clearing what was typed does not count towards leaving.
        this.#editor.setText("");
        this.#lastCtrlC = Number.NEGATIVE_INFINITY;
      } else if (now - this.#lastCtrlC < DOUBLE_CTRL_C_MS) {
        this.#handlers?.exit();
      } else {
        if (this.#running) this.#handlers?.interrupt();
        this.line({ text: this.#style.dim("(Ctrl-C again to exit)") });
        this.#lastCtrlC = now;
      }
      this.#tui.requestRender();
      return { consume: true };
    }
    if (matchesKey(data, "ctrl+d") && this.#editor.getText() === "") {
      this.#handlers?.exit();
      return { consume: true };
    }
    return undefined;
  }

  /**
   * An open question owns the input: every key goes to it and none to the editor, so nothing
   * typed while it shows is sent as a message or a steer. Only its answer keys answer it (`y`
   * once, `s` session, `p` the prefix for the session when offered, `n` or Esc denies; Esc also
   * interrupts the turn); any other key is dropped. An answer key counts only after a pause: not
   * within the guard after the question appeared, nor right after another key (a letter inside a
   * word being typed is not an answer).
   */
  #answer(data: string): { consume: boolean } {
    const asking = this.#asking;
    if (asking === undefined) return { consume: true };
    const now = this.#now();
    const settled = now - asking.lastKeyAt >= this.#guardMs;
    const escaped = matchesKey(data, "escape");
    const answer = escaped ? "deny" : approvalKeyOf(data, asking.prefix);
    if (answer === undefined || !settled) {
      if (!escaped) asking.lastKeyAt = now;
      return { consume: true };
    }
    this.#asking = undefined;
    asking.resolve(answer);
    if (escaped && this.#running) this.#handlers?.interrupt();
    return { consume: true };
  }

  modelText(delta: string): void {
    if (this.#streaming === undefined) {
      this.#streaming = { raw: "", view: new Text("", 0, 0) };
      this.#history.addChild(this.#streaming.view);
    }
    this.#streaming.raw += delta;
    this.#streaming.view.setText(
      this.#streaming.raw
        .split("\n")
        .map((line) => modelLine(this.#style, line))
        .join("\n"),
    );
    this.#tui.requestRender();
  }

  endModelText(): void {
    this.#streaming = undefined;
  }

  line(line: ChatLine): void {
    this.#streaming = undefined;
    this.#history.addChild(new Text(line.text, 0, 0));
    this.#tui.requestRender();
  }

  /** The live line under which its output is drawn says whose it is: the tag is not needed. */
  toolStarted(id: string, label: ChatLine, _tag: ChatLine): void {
    this.#streaming = undefined;
    const view = new Text("", 0, 0);
    this.#calls.set(id, { label, started: this.#now(), output: [], view });
    this.#live.addChild(view);
    this.#drawCalls();
    if (this.#timer === undefined) this.#timer = setInterval(() => this.#drawCalls(), FRAME_MS);
  }

  toolOutput(id: string, lines: readonly ChatLine[]): void {
    const call = this.#calls.get(id);
    if (call === undefined) return;
    call.output = lines;
    this.#drawCalls();
  }

  toolFinished(id: string, line: ChatLine): void {
    const call = this.#calls.get(id);
    if (call !== undefined) {
      this.#live.removeChild(call.view);
      this.#calls.delete(id);
    }
    if (this.#calls.size === 0) this.#stopTimer();
    this.line(line);
  }

  ask(view: ApprovalView, signal: AbortSignal): Promise<ApprovalAnswer> {
    if (signal.aborted || !this.#started) return Promise.resolve("deny");
    this.#streaming = undefined;
    const shown = new Text(view.lines.map((line) => line.text).join("\n"), 0, 0);
    this.#live.addChild(shown);
    this.#question.setText(view.question.text);
    this.#tui.requestRender();
    return new Promise<ApprovalAnswer>((resolve) => {
      const finish = (answer: ApprovalAnswer) => {
        signal.removeEventListener("abort", onAbort);
        this.#live.removeChild(shown);
        this.#question.setText("");
        // The question and the answer stay in the scrollback.
        this.#history.addChild(shown);
        this.line({
          text: `${view.question.text}${answerText(this.#style, view, answer)}`,
        });
        resolve(answer);
      };
      const onAbort = () => {
        this.#asking = undefined;
        finish("deny");
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#asking = { resolve: finish, lastKeyAt: this.#now(), prefix: view.prefix !== undefined };
    });
  }

  pick(view: PickView, signal: AbortSignal): Promise<number | undefined> {
    if (signal.aborted || !this.#started || this.#picking) return Promise.resolve(undefined);
    this.#streaming = undefined;
    const title = new Text(view.title.text, 0, 0);
    const list = new SelectList(
      view.rows.map((row, index) => ({ value: String(index), label: row.text })),
      PICK_VISIBLE,
      {
        selectedPrefix: (text) => text,
        selectedText: (text) => this.#style.bold(text),
        description: (text) => this.#style.dim(text),
        scrollInfo: (text) => this.#style.dim(text),
        noMatch: (text) => this.#style.dim(text),
      },
    );
    const hint = new Text(this.#style.dim("  ↑/↓ choose · Enter picks · Esc cancels"), 0, 0);
    for (const part of [title, list, hint]) this.#live.addChild(part);
    this.#tui.setFocus(list);
    this.#tui.requestRender();
    return new Promise<number | undefined>((resolve) => {
      const finish = (index: number | undefined) => {
        if (this.#picking !== finish) return;
        this.#picking = undefined;
        signal.removeEventListener("abort", onAbort);
        for (const part of [title, list, hint]) this.#live.removeChild(part);
        this.#tui.setFocus(this.#editor);
        this.#tui.requestRender();
        resolve(index);
      };
      const onAbort = () => finish(undefined);
      signal.addEventListener("abort", onAbort, { once: true });
      list.onSelect = (item) => finish(Number(item.value));
      list.onCancel = () => finish(undefined);
      this.#picking = finish;
    });
  }

  footer(status: FooterStatus): void {
    this.#running = status.running;
    this.#footer.setText(footerLine(this.#style, status));
    this.#tui.requestRender();
  }

  #drawCalls(): void {
    const now = this.#now();
    const frame = SPINNER[Math.floor(now / FRAME_MS) % SPINNER.length] ?? "·";
    for (const call of this.#calls.values()) {
      const elapsed = ((now - call.started) / 1000).toFixed(1);
      const lines = [
        `${this.#style.cyan(frame)} ${call.label.text} ${this.#style.dim(`${elapsed}s`)}`,
        ...call.output.map((line) => line.text),
      ];
      call.view.setText(lines.join("\n"));
    }
    this.#tui.requestRender();
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
