import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Node, Parser } from "web-tree-sitter";
import { hiddenEvaluation, PROGRAM_VARIABLES } from "./shell-evaluation.js";

/**
 * What a shell command line runs, as permission rules see it: every simple command it contains,
 * each normalized (quotes removed where they do not change the word, one space between words,
 * wrappers such as `env`, `nohup`, `timeout 5` and `sh -c '...'` seen through).
 *
 * Parser choice: tree-sitter's bash grammar (WASM, no native build). It is a real parser, so
 * subshells, `{ }` groups, `$(...)`, backticks, process substitution, heredocs (including
 * substitutions inside their bodies), functions, `if`/`for`/`while` bodies and quoting are
 * nodes of one tree. shell-quote, the other candidate that runs on Node 20, only tokenizes
 * operators: it does not see into `$(...)` or backticks and does not know heredocs, so a
 * command hidden in them would not be split out.
 */
export interface CommandPart {
  /** The simple command as rules match it, e.g. `git push origin`. */
  text: string;
  /** Set when what this part runs cannot be known before it runs; the reason in words. */
  unknown?: string;
  /** An argument is only known at run time (an expansion, or what xargs reads from stdin). */
  dynamicArguments?: boolean;
}

export interface CommandSplit {
  parts: CommandPart[];
}

/** How deep `sh -c`, `eval` and wrappers may nest before the command is called unknowable. */
const MAX_DEPTH = 8;

let parser: Parser | undefined;
let loading: Promise<void> | undefined;

/**
 * Load the parser (WASM, about 20 ms once per process). Must have resolved before `splitCommand`
 * runs; the policy ports await it before deciding a shell call.
 */
export function loadShellParser(): Promise<void> {
  loading ??= (async () => {
    const require = createRequire(import.meta.url);
    const { Parser: ParserClass, Language } = await import("web-tree-sitter");
    const runtimeWasm = require.resolve("web-tree-sitter/web-tree-sitter.wasm");
    await ParserClass.init({ locateFile: () => runtimeWasm });
    const bash = await Language.load(readFileSync(require.resolve("tree-sitter-bash/tree-sitter-bash.wasm")));
    const instance = new ParserClass();
    instance.setLanguage(bash);
    parser = instance;
  })();
  return loading;
}

/** Split a command line into its simple commands. Never throws for any input. */
export function splitCommand(command: string): CommandSplit {
  return { parts: split(command, 0) };
}

function split(command: string, depth: number): CommandPart[] {
  if (parser === undefined) throw new Error("the shell parser is not loaded: await loadShellParser() first");
  const text = command.trim();
  if (depth > MAX_DEPTH) return [{ text, unknown: "commands nest too deeply to be checked" }];
  const tree = parser.parse(text);
  if (tree === null) return [{ text, unknown: "the command could not be parsed" }];
  try {
    const root = tree.rootNode;
    if (root.hasError || misparsed(root, text))
      return [{ text: collapse(text), unknown: "the command does not parse as shell syntax" }];
    const parts: CommandPart[] = [];
    collect(root, parts, depth);
    const hidden = hiddenEvaluation(root, text);
    if (hidden !== undefined) parts.push({ text: collapse(text), unknown: hidden });
    // Only assignments, declarations or comments: nothing is run, the line itself is the subject.
    if (parts.length === 0) parts.push({ text: collapse(text) });
    return parts;
  } finally {
    tree.delete();
  }
}

/**
 * Whether the tree is not what bash runs. The grammar gets some lines wrong in ways that hide a
 * command, each found by running bash itself as the oracle (test/policy/shell-command.test.ts):
 * - `$`, a newline and a name read as one expansion `$name` (`echo <$` NEWLINE `curl evil`);
 * - text skipped between tokens (`\ #;curl evil`: bash runs `curl evil` after the word ` #`);
 * - a newline inside one simple command (`] ==` NEWLINE `curl evil`);
 * - a comment where bash sees none: `#` not at the start of a word (after an escaped blank or a
 *   line continuation);
 * - a descriptor read as a command (`0> = curl evil`: bash redirects to `=` and runs `curl evil`);
 * - two words where bash reads one (`>]\\! curl evil`: bash redirects to `]!` and runs `curl evil`).
 * Such a line is treated as one that does not parse, which asks.
 */
function misparsed(root: Node, text: string): boolean {
  const gapProblem = (from: number, to: number, inCommand: boolean): boolean => {
    // Only blanks and line continuations may lie between tokens; inside a simple command, no
    // newline of its own (that would end the command in bash).
    const gap = text.slice(from, to).replace(/\\\n/g, "");
    return /[^ \t\n]/.test(gap) || (inCommand && gap.includes("\n"));
  };
  const visit = (node: Node): boolean => {
    const pieces = node.children;
    const touching = node.type === "simple_expansion" || node.type === "concatenation";
    for (let i = 1; i < pieces.length; i++) {
      const before = pieces[i - 1]!;
      const after = pieces[i]!;
      if (touching && before.endIndex !== after.startIndex) return true;
      if (separate.has(node.type) && joined(text, before, after)) return true;
      if (node.type !== "file_redirect" && separate.has(node.type) && descriptorTaken(before, after))
        return true;
      if (gapProblem(before.endIndex, after.startIndex, node.type === "command")) return true;
    }
    if (node.type === "comment" && !commentStartsWord(text, node.startIndex)) return true;
    for (const child of pieces) if (visit(child)) return true;
    return false;
  };
  const first = root.children[0];
  const last = root.children[root.children.length - 1];
  if (first && gapProblem(0, first.startIndex, false)) return true;
  if (last && gapProblem(last.endIndex, text.length, false)) return true;
  return visit(root);
}

/** Nodes whose children bash reads as separate words only with a blank or an operator between. */
const separate = new Set(["command", "redirected_statement", "file_redirect"]);

/** Two tokens that touch with no operator at the seam: bash reads them as one word. */
function joined(text: string, before: Node, after: Node): boolean {
  if (before.endIndex !== after.startIndex || before.endIndex === 0) return false;
  const metacharacter = (char: string) => " \t\n|&;()<>".includes(char);
  return (
    !metacharacter(text[before.endIndex - 1] as string) && !metacharacter(text[after.startIndex] as string)
  );
}

/** Digits right before `<` or `>` as a word of their own: bash reads them as the redirect's descriptor. */
function descriptorTaken(before: Node, after: Node): boolean {
  return before.endIndex === after.startIndex && /^\d+$/.test(before.text) && /^[<>]/.test(after.text);
}

/** Whether bash starts a comment at `index`: `#` at the start of a word. */
function commentStartsWord(text: string, index: number): boolean {
  if (index === 0) return true;
  const before = text[index - 1] as string;
  const escaped = index >= 2 && text[index - 2] === "\\";
  if (before === " " || before === "\t" || before === "\n") return !escaped;
  return ";&|()".includes(before) && !escaped;
}

function collect(node: Node, parts: CommandPart[], depth: number): void {
  if (node.type === "command") parts.push(...simpleCommand(node, depth));
  if (node.type === "variable_assignment") {
    const name = node.childForFieldName("name")?.text ?? "";
    if (PROGRAM_VARIABLES.has(name)) {
      parts.push({ text: collapse(node.text), unknown: `setting ${name} changes what a command name runs` });
    }
  }
  // Children too: `$(...)`, backticks and process substitutions inside words are commands of their own.
  for (const child of node.namedChildren) if (child !== null) collect(child, parts, depth);
}

interface Word {
  value: string;
  static: boolean;
}

function simpleCommand(node: Node, depth: number): CommandPart[] {
  const words: Word[] = [];
  const redirects: string[] = [];
  for (const child of node.namedChildren) {
    if (child === null || child.type === "variable_assignment") continue;
    if (child.type === "file_redirect" || child.type === "herestring_redirect")
      redirects.push(collapse(child.text));
    else if (child.type === "command_name") {
      const inner = child.namedChildren[0];
      words.push(inner ? wordOf(inner, true) : { value: child.text, static: false });
    } else words.push(wordOf(child, false));
  }
  const parent = node.parent;
  if (parent?.type === "redirected_statement" && parent.childForFieldName("body")?.id === node.id) {
    for (const child of parent.namedChildren) {
      if (child?.type === "file_redirect" || child?.type === "herestring_redirect")
        redirects.push(collapse(child.text));
    }
  }
  return throughWrappers(words, redirects, depth);
}

/** The value of a word when it is known without running anything. */
function wordOf(node: Node, commandName: boolean): Word {
  switch (node.type) {
    case "word": {
      const raw = node.text;
      // Brace expansion (`{git,push}`) and, in a command name, globs make a different word at run time.
      if (/\{[^}]*(,|\.\.)[^}]*\}/.test(raw)) return { value: raw, static: false };
      if (commandName && /[*?[]/.test(raw)) return { value: raw, static: false };
      return { value: raw.replace(/\\\n/g, "").replace(/\\(.)/gs, "$1"), static: true };
    }
    case "number":
      return { value: node.text, static: true };
    case "raw_string":
      return { value: node.text.slice(1, -1), static: true };
    case "string": {
      if (node.namedChildren.some((child) => child?.type !== "string_content")) {
        return { value: collapse(node.text), static: false };
      }
      return {
        value: node.text
          .slice(1, -1)
          .replace(/\\\n/g, "")
          .replace(/\\([$`"\\])/g, "$1"),
        static: true,
      };
    }
    case "concatenation": {
      const pieces = node.namedChildren.map((child) =>
        child === null ? { value: "", static: false } : wordOf(child, commandName),
      );
      // A concatenation's unnamed pieces (e.g. a bare `$`) are not words we can read.
      const covered = node.namedChildren.reduce((sum, child) => sum + (child?.text.length ?? 0), 0);
      const known = pieces.every((piece) => piece.static) && covered === node.text.length;
      return known
        ? { value: pieces.map((piece) => piece.value).join(""), static: true }
        : { value: collapse(node.text), static: false };
    }
    default:
      return { value: collapse(node.text), static: false };
  }
}

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash"]);
const NAME_ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/**
 * Remove wrappers that run the rest of their words as a command, so rules see that command.
 * Each wrapper's options are skipped as that program reads them.
 */
function throughWrappers(given: readonly Word[], redirects: readonly string[], depth: number): CommandPart[] {
  let words = given;
  let dynamicFromInput = false;
  for (let hops = 0; hops <= MAX_DEPTH; hops++) {
    const first = words[0];
    const whole = (): CommandPart[] => [partOf(words, redirects, dynamicFromInput)];
    if (first === undefined) return [];
    if (!first.static) {
      return [{ text: textOf(words, redirects), unknown: "the command name is only known when it runs" }];
    }
    const name = first.value.slice(first.value.lastIndexOf("/") + 1);
    const rest = words.slice(1);
    switch (name) {
      case "eval": {
        if (rest.some((word) => !word.static) || depth >= MAX_DEPTH) {
          return [
            { text: textOf(words, redirects), unknown: "eval runs text that is only known when it runs" },
          ];
        }
        return split(rest.map((word) => word.value).join(" "), depth + 1);
      }
      case "env": {
        const index = skipOptions(rest, { withValue: ["-u", "--unset", "-C", "--chdir"], assignments: true });
        if (index === undefined)
          return unknownPart(words, redirects, "env options that run a command string");
        if (index >= rest.length) return whole();
        words = rest.slice(index);
        continue;
      }
      case "command": {
        if (rest.some((word) => word.value === "-v" || word.value === "-V")) return whole();
        const index = skipOptions(rest, { withValue: [] });
        if (index === undefined || index >= rest.length) return whole();
        words = rest.slice(index);
        continue;
      }
      case "builtin":
      case "nohup":
      case "time":
      case "setsid":
      case "exec":
      case "nice":
      case "stdbuf": {
        const withValue = { exec: ["-a"], nice: ["-n", "--adjustment"], stdbuf: ["-i", "-o", "-e"] }[
          name as "exec" | "nice" | "stdbuf"
        ];
        const index = skipOptions(rest, { withValue: withValue ?? [] });
        if (index === undefined) return unknownPart(words, redirects, `${name} options that cannot be read`);
        if (index >= rest.length) return whole();
        words = rest.slice(index);
        continue;
      }
      case "timeout": {
        const index = skipOptions(rest, { withValue: ["-s", "--signal", "-k", "--kill-after"] });
        if (index === undefined) return unknownPart(words, redirects, "timeout options that cannot be read");
        // The next word is the duration.
        if (index + 1 >= rest.length) return whole();
        words = rest.slice(index + 1);
        continue;
      }
      case "xargs": {
        const index = skipOptions(rest, {
          withValue: ["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--eof"],
        });
        if (index === undefined) return unknownPart(words, redirects, "xargs options that cannot be read");
        // xargs appends what it reads from stdin: the arguments are only known when it runs.
        dynamicFromInput = true;
        words = index >= rest.length ? [{ value: "echo", static: true }] : rest.slice(index);
        continue;
      }
      case "sudo":
      case "doas":
      case "coproc": {
        const withValue = ["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"];
        const index = skipOptions(rest, { withValue: name === "coproc" ? [] : withValue });
        if (index === undefined) return unknownPart(words, redirects, `${name} options that cannot be read`);
        if (index >= rest.length) return whole();
        words = rest.slice(index);
        continue;
      }
      case "watch":
      case "trap": {
        // Both run text as shell code: watch its joined arguments, trap its first argument.
        const index = skipOptions(rest, { withValue: name === "watch" ? ["-n", "--interval", "-d"] : [] });
        const code =
          index === undefined
            ? undefined
            : name === "watch"
              ? rest.slice(index)
              : rest.slice(index, index + 1);
        if (code === undefined || code.some((word) => !word.static) || depth >= MAX_DEPTH) {
          return unknownPart(words, redirects, `${name} runs code that is only known when it runs`);
        }
        const text = code.map((word) => word.value).join(" ");
        return text === "" || text === "-" ? whole() : [...whole(), ...split(text, depth + 1)];
      }
      case "alias":
      case "enable":
        return unknownPart(words, redirects, `${name} changes what later command names run`);
      case "hash":
        if (rest.some((word) => word.value.startsWith("-p"))) {
          return unknownPart(words, redirects, "hash -p changes what a later command name runs");
        }
        return whole();
      case "find":
        return [...whole(), ...findCommands(rest, depth)];
      default:
        if (SHELLS.has(name)) return shellInvocation(words, redirects, depth);
        return whole();
    }
  }
  return unknownPart(words, redirects, "wrappers nest too deeply to be checked");
}

/** `find ... -exec CMD {} ;` runs CMD for each file: check it (its `{}` arguments come at run time). */
function findCommands(words: readonly Word[], depth: number): CommandPart[] {
  const parts: CommandPart[] = [];
  for (let i = 0; i < words.length; i++) {
    if (!["-exec", "-execdir", "-ok", "-okdir"].includes((words[i] as Word).value)) continue;
    let end = i + 1;
    while (end < words.length && ![";", "+"].includes((words[end] as Word).value)) end++;
    const command = words.slice(i + 1, end);
    if (command.length > 0) {
      const inner = throughWrappers(command, [], depth + 1);
      for (const part of inner)
        parts.push(part.unknown === undefined ? { ...part, dynamicArguments: true } : part);
    }
    i = end;
  }
  return parts;
}

/** `bash -c 'script'` runs the script: check the script's commands. Otherwise the shell itself. */
function shellInvocation(words: readonly Word[], redirects: readonly string[], depth: number): CommandPart[] {
  for (let i = 1; i < words.length; i++) {
    const word = words[i] as Word;
    if (!word.static) return unknownPart(words, redirects, "shell options that are only known when it runs");
    const value = word.value;
    if (value === "--") break;
    if (/^[-+]o$|^[-+]O$/.test(value)) {
      i++;
      continue;
    }
    if (/^-[A-Za-z]*c[A-Za-z]*$/.test(value)) {
      const script = words[i + 1];
      if (script === undefined) return unknownPart(words, redirects, "-c without a command");
      if (!script.static) return unknownPart(words, redirects, "the -c script is only known when it runs");
      return split(script.value, depth + 1);
    }
    if (/^[-+]/.test(value)) continue;
    break;
  }
  return [partOf(words, redirects, false)];
}

/**
 * Index of the first word after a wrapper's options, or undefined when an option's value is
 * not known. `withValue` options take the next word; `--opt=value` and `-n1` are one word.
 */
function skipOptions(
  words: readonly Word[],
  options: { withValue: readonly string[]; assignments?: boolean },
): number | undefined {
  let i = 0;
  while (i < words.length) {
    const word = words[i] as Word;
    if (!word.static) return undefined;
    const value = word.value;
    if (value === "--") return i + 1;
    if (options.assignments === true && NAME_ASSIGNMENT.test(value)) {
      i++;
      continue;
    }
    if (!value.startsWith("-") || value === "-") return i;
    // `env -S 'cmd args'` / `--split-string` run a command string: not followed here.
    if (options.assignments === true && (value.startsWith("-S") || value.startsWith("--split-string"))) {
      return undefined;
    }
    if (options.withValue.includes(value)) {
      i += 2;
      continue;
    }
    i++;
  }
  return i;
}

function partOf(
  words: readonly Word[],
  redirects: readonly string[],
  dynamicFromInput: boolean,
): CommandPart {
  const part: CommandPart = { text: textOf(words, redirects) };
  if (dynamicFromInput || words.some((word) => !word.static)) part.dynamicArguments = true;
  return part;
}

function unknownPart(words: readonly Word[], redirects: readonly string[], reason: string): CommandPart[] {
  return [{ text: textOf(words, redirects), unknown: reason }];
}

function textOf(words: readonly Word[], redirects: readonly string[]): string {
  return [...words.map((word) => word.value), ...redirects].join(" ");
}

/** One space for every run of blanks. */
function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}
