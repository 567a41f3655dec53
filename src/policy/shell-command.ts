import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Node, Parser } from "web-tree-sitter";
import { changesPrograms, hiddenEvaluation } from "./shell-evaluation.js";
import { readOptions } from "./shell-options.js";
import {
  DYNAMIC_LOADER,
  NOT_UNDERSTOOD,
  RUNNING_SUBCOMMANDS,
  SHELL_OPTIONS,
  SHELLS,
  WRAPPER_OPTIONS,
} from "./shell-wrappers.js";

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
  /**
   * Set when the part runs shell code the line does not show (a script file, its input, startup
   * files); the reason in words. Any deny or ask rule could cover what that code runs.
   */
  opaque?: string;
  /** The wrappers seen through to reach this command (`timeout 5`, `env -i`), outermost first. */
  wrappers?: string[];
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
    if (changesPrograms(name)) {
      parts.push({ text: collapse(node.text), unknown: `setting ${name} changes what a command name runs` });
    }
  }
  // Children too: `$(...)`, backticks and process substitutions inside words are commands of their own.
  for (const child of node.namedChildren) if (child !== null) collect(child, parts, depth);
}

interface Word {
  value: string;
  static: boolean;
  /** Holds an unquoted `*`, `?` or `[...]`: bash replaces the word by matching file names. */
  glob?: boolean;
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

/**
 * Whether an unquoted word is a pathname pattern: `*`, `?` or a bracket expression not escaped.
 * (A lone `[` is not: bash needs the closing `]`.) Quoted pieces are never patterns.
 */
function isPattern(raw: string): boolean {
  const unescaped = raw.replace(/\\./gs, "__");
  return /[*?]/.test(unescaped) || /\[.*\]/s.test(unescaped);
}

/** The value of a word when it is known without running anything. */
function wordOf(node: Node, commandName: boolean): Word {
  switch (node.type) {
    case "word": {
      const raw = node.text;
      // Brace expansion (`{git,push}`) and, in a command name, globs make a different word at run time.
      if (/\{[^}]*(,|\.\.)[^}]*\}/.test(raw)) return { value: raw, static: false };
      if (commandName && /[*?[]/.test(raw)) return { value: raw, static: false };
      const value = raw.replace(/\\\n/g, "").replace(/\\(.)/gs, "$1");
      return isPattern(raw) ? { value, static: true, glob: true } : { value, static: true };
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
      if (!known) return { value: collapse(node.text), static: false };
      const value = pieces.map((piece) => piece.value).join("");
      // The grammar splits `cur[l]` into pieces: look for a pattern across the unquoted ones.
      const unquoted = node.namedChildren
        .map((child) => (child?.type === "word" ? child.text : "_".repeat(child?.text.length ?? 0)))
        .join("");
      return isPattern(unquoted) ? { value, static: true, glob: true } : { value, static: true };
    }
    default:
      return { value: collapse(node.text), static: false };
  }
}

/** What the words being read came from: a line, or a program that fills them in when it runs. */
interface Source {
  /** xargs or find adds words read at run time: a command position left empty is filled by them. */
  fromInput: boolean;
  /** Text xargs -I or find replaces by what it reads (`{}`): where it lies is only known at run time. */
  replacement?: string;
}

const LINE: Source = { fromInput: false };

/**
 * Remove wrappers that run the rest of their words as a command, so rules see that command.
 * Each wrapper's options are read as that program reads them (shell-options.ts); an option it
 * does not know, a program that runs a command harness does not read, or a pattern as the
 * command name makes the command unknown. Each wrapper seen through is kept on the part
 * (`wrappers`), so a deny rule naming the wrapper still applies.
 */
function throughWrappers(
  given: readonly Word[],
  redirects: readonly string[],
  depth: number,
  from: Source = LINE,
): CommandPart[] {
  let words = given;
  let source = from;
  const wrappers: string[] = [];
  const finish = (parts: CommandPart[]): CommandPart[] =>
    wrappers.length === 0
      ? parts
      : parts.map((part) => ({ ...part, wrappers: [...wrappers, ...(part.wrappers ?? [])] }));
  for (let hops = 0; hops <= MAX_DEPTH; hops++) {
    const first = words[0];
    const whole = (): CommandPart[] => finish([partOf(words, redirects, source.fromInput)]);
    const unknown = (reason: string): CommandPart[] => finish(unknownPart(words, redirects, reason));
    if (first === undefined) {
      return source.fromInput ? unknown("the command is what xargs or find reads when it runs") : [];
    }
    if (!first.static) return unknown("the command name is only known when it runs");
    if (first.glob === true) {
      return unknown("the command name is a pattern that bash replaces by matching file names when it runs");
    }
    if (source.replacement !== undefined && first.value.includes(source.replacement)) {
      return unknown(
        `the command name holds ${source.replacement}, which is replaced by what is read when it runs`,
      );
    }
    const name = first.value.slice(first.value.lastIndexOf("/") + 1);
    const rest = words.slice(1);
    const current = words;
    // The command a wrapper runs: the words after its options (and operands), or what it reads.
    const into = (next: readonly Word[]): CommandPart[] | undefined => {
      if (next.length === 0 && !source.fromInput) return whole();
      wrappers.push(textOf(current, []));
      words = next;
      return undefined;
    };
    if (NOT_UNDERSTOOD.has(name) || DYNAMIC_LOADER.test(name)) {
      return unknown(`${name} runs a command in a way harness does not read`);
    }
    const running = RUNNING_SUBCOMMANDS[name];
    if (running !== undefined && runsSubcommand(rest, running)) {
      return unknown(`${name} runs a program named by its arguments in a way harness does not read`);
    }
    const table = WRAPPER_OPTIONS[name];
    const read =
      table === undefined
        ? undefined
        : readOptions(name, rest, table, { numeric: name === "nice", dashIsOption: name === "env" });
    if (read?.kind === "unknown") return unknown(read.reason);
    const index = read?.index ?? 0;
    const given = new Set(read?.options.map((option) => option.name) ?? []);
    const codeOf = (text: string, what: string): CommandPart[] =>
      finish(code(text, depth, source, () => unknownPart(current, redirects, what)));
    let done: CommandPart[] | undefined;
    switch (name) {
      case "eval": {
        if (rest.some((word) => !word.static))
          return unknown("eval runs text that is only known when it runs");
        return codeOf(
          rest.map((word) => word.value).join(" "),
          "eval runs text that is only known when it runs",
        );
      }
      case "source":
      case ".": {
        const file = rest[0];
        if (file === undefined) return whole();
        if (!file.static) return unknown(`${name} runs a file only known when it runs`);
        return finish([
          {
            ...partOf(words, redirects, source.fromInput),
            opaque: `${name} runs the shell code in ${file.value}`,
          },
        ]);
      }
      case "env": {
        let i = index;
        for (; i < rest.length; i++) {
          const word = rest[i] as Word;
          if (!word.static) return unknown("env has an assignment or command only known when it runs");
          const equals = word.value.indexOf("=");
          if (equals <= 0) break;
          const variable = word.value.slice(0, equals);
          if (!/^[A-Za-z_]\w*$/.test(variable) || changesPrograms(variable)) {
            return unknown(`env sets ${variable}, which changes what a program runs`);
          }
        }
        done = into(rest.slice(i));
        break;
      }
      case "command":
        if (given.has("-v") || given.has("-V")) return whole();
        done = into(rest.slice(index));
        break;
      case "flock": {
        // flock [options] FILE COMMAND..., flock [options] FILE -c STRING, flock [options] FD.
        const after = rest.slice(index + 1);
        if (rest[index] === undefined || after.length === 0) return whole();
        const flag = after[0] as Word;
        if (flag.static && (flag.value === "-c" || flag.value === "--command")) {
          const script = after[1];
          if (script === undefined || !script.static || after.length !== 2) {
            return unknown("flock -c runs a command string only known when it runs");
          }
          wrappers.push(textOf(current, []));
          return codeOf(script.value, "flock -c runs text only known when it runs");
        }
        done = into(after);
        break;
      }
      case "ionice":
        if (given.has("-p") || given.has("-P") || given.has("-u")) return whole();
        done = into(rest.slice(index));
        break;
      case "taskset":
      case "chrt":
      case "timeout": {
        const onProcess =
          (name === "taskset" && given.has("-p")) ||
          (name === "chrt" && (given.has("-p") || given.has("-m")));
        if (onProcess) return whole();
        // The operand before the command: a CPU mask or list, a priority, a duration.
        const operand = rest[index];
        if (operand === undefined) return whole();
        if (!operand.static || !OPERAND[name].test(operand.value)) {
          return unknown(`${name} has an operand harness cannot read as ${OPERAND_NAME[name]}`);
        }
        done = into(rest.slice(index + 1));
        break;
      }
      case "xargs": {
        const replace = read?.options.find((option) => option.name === "-I" || option.name === "-i");
        source = {
          fromInput: true,
          ...(replace !== undefined ? { replacement: replace.value ?? "{}" } : {}),
        };
        // With no command, xargs runs echo.
        const next = rest.slice(index);
        done = into(next.length === 0 ? [{ value: "echo", static: true }] : next);
        break;
      }
      case "watch": {
        if (given.has("-x")) {
          done = into(rest.slice(index));
          break;
        }
        const text = rest.slice(index);
        if (text.length === 0) return whole();
        if (text.some((word) => !word.static))
          return unknown("watch runs code that is only known when it runs");
        wrappers.push(textOf(current, []));
        return codeOf(
          text.map((word) => word.value).join(" "),
          "watch runs code that is only known when it runs",
        );
      }
      case "trap": {
        const handler = rest[index];
        if (handler === undefined) return whole();
        if (!handler.static) return unknown("trap runs code that is only known when it runs");
        if (handler.value === "" || handler.value === "-" || rest.length === index + 1) return whole();
        return [
          ...whole(),
          ...code(handler.value, depth, source, () =>
            unknownPart(current, redirects, "trap runs code that is only known when it runs"),
          ),
        ];
      }
      case "mapfile":
      case "readarray":
        // -C names code bash runs every few lines it reads.
        if (rest.some((word) => !word.static || /^-[A-Za-z]*C/.test(word.value))) {
          return unknown(`${name} -C runs code (a callback) while it reads`);
        }
        return whole();
      case "compgen":
      case "complete":
      case "bind":
        if (rest.some((word) => !word.static || /^-[A-Za-z]*[CFx]/.test(word.value))) {
          return unknown(`${name} runs a command or function it is given`);
        }
        return whole();
      case "alias":
      case "enable":
        return unknown(`${name} changes what later command names run`);
      case "hash":
        if (rest.some((word) => word.value.startsWith("-p"))) {
          return unknown("hash -p changes what a later command name runs");
        }
        return whole();
      case "find":
        return finish([partOf(words, redirects, source.fromInput), ...findCommands(rest, depth)]);
      default:
        if (SHELLS.has(name)) return finish(shellInvocation(words, redirects, depth, source));
        if (table === undefined) return whole();
        done = into(rest.slice(index));
    }
    if (done !== undefined) return done;
  }
  return unknownPart(words, redirects, "wrappers nest too deeply to be checked");
}

/**
 * Whether a package manager's words name a subcommand that runs a program: the first word that
 * is not an option, or the second when an option before it may have taken the first as its value
 * (`npm --prefix dir exec`), or an option of that name anywhere (`nix-shell --run`).
 */
function runsSubcommand(words: readonly Word[], running: readonly string[]): boolean {
  let optionBefore = false;
  let seen = 0;
  for (const word of words) {
    if (!word.static) return true;
    if (running.includes(word.value))
      return seen === 0 || (seen === 1 && optionBefore) || word.value.startsWith("-");
    if (word.value.startsWith("-")) {
      if (seen === 0 && !word.value.includes("=")) optionBefore = true;
      continue;
    }
    seen++;
    if (seen > 1) return false;
  }
  return false;
}

/** What the operand before the command must look like, and its name for a message. */
const OPERAND: Record<"taskset" | "chrt" | "timeout", RegExp> = {
  taskset: /^[0-9a-fA-FxX,:-]+$/,
  chrt: /^\d+$/,
  timeout: /^(\d+(\.\d*)?|\.\d+)[smhd]?$/,
};
const OPERAND_NAME = { taskset: "a CPU mask", chrt: "a priority", timeout: "a duration" } as const;

/**
 * Shell code a program runs (`sh -c`, eval, trap, watch, flock -c), split like a line. Text that
 * xargs or find fills in (`{}`) makes it unknown.
 */
function code(text: string, depth: number, source: Source, unknown: () => CommandPart[]): CommandPart[] {
  if (depth >= MAX_DEPTH) return unknown();
  if (source.replacement !== undefined && text.includes(source.replacement)) return unknown();
  return split(text, depth + 1);
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
      const inner = throughWrappers(command, [], depth + 1, { fromInput: false, replacement: "{}" });
      for (const part of inner)
        parts.push(part.unknown === undefined ? { ...part, dynamicArguments: true } : part);
    }
    i = end;
  }
  return parts;
}

/**
 * `bash -c 'script'` runs the script: check the script's commands. A shell given a script file
 * or reading its input runs code the line does not show (`opaque`); so does an interactive or
 * login shell, which runs startup files first.
 */
function shellInvocation(
  words: readonly Word[],
  redirects: readonly string[],
  depth: number,
  source: Source,
): CommandPart[] {
  const program = (words[0] as Word).value;
  const name = program.slice(program.lastIndexOf("/") + 1);
  // `+o name`, `+x`: the same options, turned off.
  const options = words
    .slice(1)
    .map((word) =>
      word.static && /^\+./.test(word.value) ? { ...word, value: `-${word.value.slice(1)}` } : word,
    );
  const read = readOptions(name, options, SHELL_OPTIONS);
  if (read.kind === "unknown") return unknownPart(words, redirects, read.reason);
  const given = new Set(read.options.map((option) => option.name));
  const operands = words.slice(1 + read.index);
  const startup: CommandPart[] =
    given.has("-i") || given.has("-l") || given.has("--rcfile")
      ? [
          {
            ...partOf(words, redirects, false),
            opaque: `an interactive or login ${name} runs startup files first`,
          },
        ]
      : [];
  if (given.has("-c")) {
    const script = operands[0];
    if (script === undefined) {
      return unknownPart(
        words,
        redirects,
        source.fromInput ? "the -c script is what xargs reads when it runs" : "-c without a command",
      );
    }
    if (!script.static) return unknownPart(words, redirects, "the -c script is only known when it runs");
    return [
      ...startup,
      ...code(script.value, depth, source, () =>
        unknownPart(words, redirects, "the -c script is only known when it runs"),
      ),
    ];
  }
  if (given.has("--version") || given.has("--help")) return [partOf(words, redirects, false)];
  const script = operands[0];
  const opaque =
    script !== undefined && !given.has("-s")
      ? `${name} runs the script ${script.value}`
      : `${name} runs the commands it reads from its input`;
  return [...startup, { ...partOf(words, redirects, source.fromInput), opaque }];
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
