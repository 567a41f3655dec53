import type { EventData } from "../../journal/vocabulary.js";
import { type CommandEntry, type Extensions, usable } from "./discover.js";

/**
 * `/NAME args`: a prompt template from the user's or the project's command folder, expanded with
 * its arguments. `$ARGUMENTS` is everything after the name; `$1`..`$9` the words (a "quoted
 * phrase" is one word; a missing one is empty). A template that uses neither gets the arguments
 * on a line of their own after it. The expanded text is the turn's input as recorded; the
 * template's name, source and digest are journaled with it (`command.expanded`).
 */

export interface ExpandedCommand {
  text: string;
  command: EventData<"command.expanded">;
}

export type CommandLookup =
  | { kind: "none" }
  | { kind: "expanded"; expanded: ExpandedCommand }
  | { kind: "refused"; name: string; message: string };

const INVOCATION = /^\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})(?:\s+([\s\S]*))?$/;

/** The command a line names (`/NAME args`), expanded; `none` when it names no template. */
export function expandCommandLine(line: string, extensions: Pick<Extensions, "commands">): CommandLookup {
  const match = INVOCATION.exec(line.trim());
  if (match === null) return { kind: "none" };
  const name = match[1]!;
  const entry = extensions.commands.find((command) => command.name === name);
  if (entry === undefined) return { kind: "none" };
  if (!usable(entry)) {
    const why = entry.problem ?? entry.trust.reason ?? "not approved";
    return {
      kind: "refused",
      name,
      message: `/${name} (${entry.shown}) is not loaded: ${why}${entry.problem === undefined ? `; review it, then: harness plugins approve ${name}` : ""}`,
    };
  }
  return { kind: "expanded", expanded: expandTemplate(entry, match[2] ?? "") };
}

export function expandTemplate(entry: CommandEntry, args: string): ExpandedCommand {
  const all = args.trim();
  const words = splitWords(all);
  const uses = /\$ARGUMENTS|\$[1-9]/.test(entry.template);
  let text = entry.template.replace(/\$ARGUMENTS|\$([1-9])/g, (_, digit: string | undefined) =>
    digit === undefined ? all : (words[Number(digit) - 1] ?? ""),
  );
  if (!uses && all !== "") text = `${text.replace(/\n*$/, "")}\n\n${all}`;
  return {
    text: text.trim() === "" ? `/${entry.name} ${all}`.trim() : text,
    command: { name: entry.name, digest: entry.digest, source: entry.source },
  };
}

/** Words split on blanks; a "double" or 'single' quoted phrase is one word, without its quotes. */
export function splitWords(text: string): string[] {
  const words: string[] = [];
  const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const match of text.matchAll(pattern)) words.push(match[1] ?? match[2] ?? match[3] ?? "");
  return words;
}
