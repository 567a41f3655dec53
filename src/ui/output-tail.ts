import { escapeForTerminal } from "../shared/terminal-text.js";
import { truncateToWidth } from "../shared/text-width.js";
import { MODEL_PREFIX } from "./lines.js";
import type { ChatLine, UiStyle } from "./ui.js";

/** Lines of a running command shown under its live line. */
export const OUTPUT_TAIL_LINES = 3;
/** Characters kept: enough for the last lines; older output is in the call's result. */
const KEPT_CHARS = 4096;
/** A line longer than this is cut: the live view is a glance, not the output. */
const LINE_CHARS = 160;

/**
 * The last lines of a running call's output, as its live line shows them. Output is the
 * command's, so every line is escaped and set under the model-text prefix; a carriage return
 * (a progress bar redrawing itself) keeps only what was written after it, as a terminal would.
 */
export class OutputTail {
  #text = "";

  append(text: string): void {
    this.#text = (this.#text + text).slice(-KEPT_CHARS);
  }

  lines(style: UiStyle, count = OUTPUT_TAIL_LINES): ChatLine[] {
    const lines = this.#text
      .split("\n")
      .map((line) => {
        const redrawn = line.replace(/\r+$/, "");
        return redrawn.slice(redrawn.lastIndexOf("\r") + 1);
      })
      .filter((line) => line.trim() !== "");
    return lines.slice(-count).map((line) => ({
      text: `    ${style.dim(MODEL_PREFIX)}${style.dim(clip(escapeForTerminal(line)))}`,
    }));
  }
}

/** Cut to LINE_CHARS columns (wide characters count two), never inside a character. */
function clip(text: string): string {
  return truncateToWidth(text, LINE_CHARS);
}
