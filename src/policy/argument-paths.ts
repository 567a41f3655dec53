import { normalizeSubjectPath } from "./rules.js";

/**
 * The words of one simple command (as the shell split gives it: `cat src/.env > out`) that may
 * name files: its arguments and redirection targets, with the forms commands take file names in
 * (`--file=PATH`, curl's `@PATH`) opened up. Flags and the program name are left out.
 *
 * A tool-agnostic ask or deny rule about a path (the built-in `*(**\/.env)`) is about the file, not
 * about the tool that reads it: `cat .env` in a shell line reads what read_file may not. Only
 * literal words are seen here; what a glob or an expansion names at run time is not (the sandbox
 * and the session's rules on the command itself stay in force for those).
 */
export function pathArguments(text: string): string[] {
  const words = text.split(/\s+/).filter((word) => word !== "");
  const found = new Set<string>();
  for (const raw of words.slice(1)) {
    // `> out`, `2>out`, `<in`, `&>log`: the target is the path.
    const word = raw.replace(/^(\d*|&)(>>?|<)/, "");
    if (word === "" || word === "|" || word === "&&") continue;
    const candidates: string[] = [];
    if (word.startsWith("-")) {
      const equals = word.indexOf("=");
      if (equals !== -1) candidates.push(word.slice(equals + 1));
    } else {
      candidates.push(word);
    }
    for (const candidate of candidates) {
      const unprefixed = candidate.startsWith("@") ? candidate.slice(1) : candidate;
      if (unprefixed === "" || /^[a-z][a-z0-9+.-]*:\/\//i.test(unprefixed)) continue;
      found.add(normalizeSubjectPath(unprefixed));
    }
  }
  return [...found];
}
