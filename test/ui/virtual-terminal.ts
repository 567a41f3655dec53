import type { Terminal as TuiTerminal } from "@mariozechner/pi-tui";
import xterm from "@xterm/headless";

/**
 * A pi-tui terminal drawn into a headless xterm: what the chat writes is interpreted as a real
 * terminal would (cursor moves, clears, colours), and `screen()` is the text a person would see.
 * Keys are handed to the UI as the terminal would send them, one sequence at a time.
 */
export class VirtualTerminal implements TuiTerminal {
  readonly #term: InstanceType<typeof xterm.Terminal>;
  #onInput: ((data: string) => void) | undefined;
  #pending: Promise<void> = Promise.resolve();

  constructor(
    readonly columns = 100,
    readonly rows = 40,
  ) {
    this.#term = new xterm.Terminal({ cols: columns, rows, allowProposedApi: true, scrollback: 5000 });
  }

  start(onInput: (data: string) => void): void {
    this.#onInput = onInput;
  }
  stop(): void {
    this.#onInput = undefined;
  }
  async drainInput(): Promise<void> {}
  write(data: string): void {
    this.#pending = this.#pending.then(() => new Promise<void>((resolve) => this.#term.write(data, resolve)));
  }
  get kittyProtocolActive(): boolean {
    return false;
  }
  moveBy(lines: number): void {
    if (lines > 0) this.write(`\x1b[${lines}B`);
    else if (lines < 0) this.write(`\x1b[${-lines}A`);
  }
  hideCursor(): void {
    this.write("\x1b[?25l");
  }
  showCursor(): void {
    this.write("\x1b[?25h");
  }
  clearLine(): void {
    this.write("\x1b[K");
  }
  clearFromCursor(): void {
    this.write("\x1b[J");
  }
  clearScreen(): void {
    this.write("\x1b[2J\x1b[H");
  }
  setTitle(): void {}
  setProgress(): void {}

  /** Send what a key or a paste sends. */
  send(data: string): void {
    this.#onInput?.(data);
  }

  /** The whole buffer (scrollback and screen) as text, after every pending write was drawn. */
  async screen(): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, 40));
    await this.#pending;
    const buffer = this.#term.buffer.active;
    const lines: string[] = [];
    for (let i = 0; i < buffer.length; i += 1)
      lines.push((buffer.getLine(i)?.translateToString(true) ?? "").trimEnd());
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    return lines.join("\n");
  }
}
