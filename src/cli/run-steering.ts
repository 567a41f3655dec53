import type { Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { ApprovalPort } from "../runtime/ports.js";

/**
 * `harness run` on a terminal: a line typed while the run works steers it (`Engine.steer`:
 * journaled at once as `user.steered`, given to the model at the next step boundary). The
 * terminal's line discipline echoes what is typed; an approval prompt takes stdin over while it is
 * open (`wrap`), so an answer is never taken for steering. Off a terminal nothing reads stdin.
 */
export class TerminalSteering {
  readonly #input: NodeJS.ReadStream;
  readonly #err: Writable;
  readonly #decoder = new StringDecoder("utf8");
  #partial = "";
  #asking = 0;
  #closed = false;
  #steer: ((text: string) => Promise<void>) | undefined;

  constructor(input: NodeJS.ReadStream, err: Writable) {
    this.#input = input;
    this.#err = err;
  }

  /** Start reading lines for `steer` (the running engine's). */
  start(steer: (text: string) => Promise<void>): void {
    this.#steer = steer;
    this.#listen();
  }

  /** The approver, with stdin its own while it asks. */
  wrap(approver: ApprovalPort): ApprovalPort {
    return {
      request: async (request, signal) => {
        this.#asking += 1;
        this.#input.off("readable", this.#onReadable);
        // A half-typed line belongs to nobody: the prompt starts clean.
        this.#partial = "";
        try {
          return await approver.request(request, signal);
        } finally {
          this.#asking -= 1;
          this.#listen();
        }
      },
    };
  }

  /** Stop reading: the run is over (stdin must not keep the process alive). */
  close(): void {
    this.#closed = true;
    this.#input.off("readable", this.#onReadable);
    this.#input.destroy();
  }

  #listen(): void {
    if (this.#closed || this.#asking > 0 || this.#steer === undefined) return;
    if (this.#input.listeners("readable").includes(this.#onReadable)) return;
    this.#input.on("readable", this.#onReadable);
  }

  readonly #onReadable = (): void => {
    for (let chunk = this.#input.read(); chunk !== null; chunk = this.#input.read()) {
      this.#partial += typeof chunk === "string" ? chunk : this.#decoder.write(chunk as Buffer);
    }
    const lines = this.#partial.split(/\r?\n/);
    this.#partial = lines.pop() ?? "";
    for (const line of lines) if (line.trim() !== "") this.#deliver(line);
  };

  #deliver(text: string): void {
    this.#steer?.(text).then(
      () => this.#err.write("harness: steering recorded; the model gets it at the next step\n"),
      () => this.#err.write("harness: the turn is ending; that line was not delivered\n"),
    );
  }
}
