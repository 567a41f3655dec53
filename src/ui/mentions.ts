import type { AutocompleteItem, AutocompleteProvider, AutocompleteSuggestions } from "@mariozechner/pi-tui";
import { escapeForTerminal } from "../shared/terminal-text.js";

/** The workspace's files, for completing `@path` (the caller honours `.gitignore`). */
export type FileLister = () => Promise<readonly string[]>;

/** How many suggestions one completion offers. */
const SHOWN = 50;
/** How long a listing is reused: typing a path asks again on every key. */
const FRESH_MS = 3000;

/** `@` at the start of the line or after a blank, and the path typed so far. */
const MENTION_BEFORE_CURSOR = /(?:^|[ \t])@([^\s@]*)$/;

/**
 * Completion of `@path` in the chat's editor (Tab, or as a path is typed after `@`): the
 * workspace files whose path contains what was typed, those starting with it first. File names
 * are shown escaped (a file name is anyone's text); the inserted value is the name itself.
 */
export class MentionCompletion implements AutocompleteProvider {
  readonly #list: FileLister;
  #cached: { at: number; files: Promise<readonly string[]> } | undefined;

  constructor(list: FileLister) {
    this.#list = list;
  }

  async getSuggestions(
    lines: string[],
    cursorLine: number,
    cursorCol: number,
  ): Promise<AutocompleteSuggestions | null> {
    const before = (lines[cursorLine] ?? "").slice(0, cursorCol);
    const match = MENTION_BEFORE_CURSOR.exec(before);
    if (match === null) return null;
    const typed = match[1] ?? "";
    const files = await this.#files();
    const starts = files.filter((file) => file.startsWith(typed));
    const contains = files.filter((file) => !file.startsWith(typed) && file.includes(typed));
    const items: AutocompleteItem[] = [...starts, ...contains]
      .slice(0, SHOWN)
      .map((file) => ({ value: file, label: escapeForTerminal(file) }));
    return items.length === 0 ? null : { items, prefix: `@${typed}` };
  }

  applyCompletion(
    lines: string[],
    cursorLine: number,
    cursorCol: number,
    item: AutocompleteItem,
    prefix: string,
  ): { lines: string[]; cursorLine: number; cursorCol: number } {
    const line = lines[cursorLine] ?? "";
    const start = cursorCol - prefix.length;
    const inserted = `@${item.value} `;
    const next = [...lines];
    next[cursorLine] = line.slice(0, start) + inserted + line.slice(cursorCol);
    return { lines: next, cursorLine, cursorCol: start + inserted.length };
  }

  shouldTriggerFileCompletion(lines: string[], cursorLine: number, cursorCol: number): boolean {
    return MENTION_BEFORE_CURSOR.test((lines[cursorLine] ?? "").slice(0, cursorCol));
  }

  #files(): Promise<readonly string[]> {
    const now = Date.now();
    if (this.#cached === undefined || now - this.#cached.at > FRESH_MS) {
      this.#cached = { at: now, files: this.#list().catch(() => []) };
    }
    return this.#cached.files;
  }
}
