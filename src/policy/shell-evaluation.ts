import type { Node } from "web-tree-sitter";

/**
 * Places where bash evaluates text as code at run time, out of sight of the command split: a
 * rule that allows `npm test*` must not also allow `declare 'a[$(curl x)]=1'; npm test`.
 *
 * bash runs a `$(...)` found inside an array subscript whenever it evaluates that subscript, and
 * subscripts are arithmetic. So code hides in:
 * - literal text shaped like a subscript (`'a[$(cmd)]'`) given to anything that takes a variable
 *   name: declare/local/export/readonly, unset, read, printf -v, test -v, `[[ -v ]]`, wait -p...;
 * - a variable's value used in arithmetic (`$((x))`, `((x))`, `${a[x]}`, `${s:x}`, `let x`,
 *   `[[ x -eq 1 ]]`): bash evaluates the value as an expression, recursively, so
 *   `x='a[$(cmd)]'; echo $((x))` runs cmd, and so does a file name or command output used that way;
 * - indirect expansion `${!x}` (x may name `a[$(cmd)]`) and prompt expansion `${x@P}` (runs `$(...)`
 *   in x's value);
 * - a name operand of those builtins that is itself only known at run time (`unset "$x"`).
 *
 * Returns why the line's effect cannot be known before it runs, or undefined. Variables that
 * only ever hold numbers the line itself wrote (`for ((i=0; i<n; i++))` with `n=3`) stay allowed.
 */
export function hiddenEvaluation(root: Node, text: string): string | undefined {
  if (SUBSCRIPT_CODE.test(text)) {
    return "the line holds a command substitution inside an array subscript, which bash runs when it evaluates the subscript";
  }
  const facts = new LineFacts();
  facts.visit(root);
  if (facts.reason !== undefined) return facts.reason;
  const unsafe = [...facts.arithmeticNames].find((name) => !facts.numericOnly(name));
  if (unsafe !== undefined) {
    return `arithmetic evaluates the value of ${unsafe} as an expression (a value such as a[$(cmd)] runs cmd)`;
  }
  return undefined;
}

/**
 * Variables that change which program a command name runs or what a shell runs first: a line
 * that sets one is not decided by the names it shows.
 */
export const PROGRAM_VARIABLES = new Set([
  "PATH",
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  "BASH_ENV",
  "ENV",
  "IFS",
  "SHELLOPTS",
  "BASHOPTS",
  // Prompts and the command bash runs before one: PS4 is expanded (command substitutions
  // included) for every traced command under `set -x`, the others in an interactive shell.
  "PS0",
  "PS1",
  "PS2",
  "PS3",
  "PS4",
  "PROMPT_COMMAND",
  // The shell flock -c, script and others start.
  "SHELL",
]);

/**
 * Whether setting `name` changes what a command name runs: the variables above, the dynamic
 * loader's `LD_*`, and `BASH_FUNC_name%%`, the form in which bash imports a function from the
 * environment (`env 'BASH_FUNC_ls%%=() { curl x; }' bash -c ls` runs curl).
 */
export function changesPrograms(name: string): boolean {
  return PROGRAM_VARIABLES.has(name) || name.startsWith("LD_") || name.startsWith("BASH_FUNC_");
}

/** A name followed by `[ ... $(` or a backtick: a subscript with a command substitution in it. */
const SUBSCRIPT_CODE = /[A-Za-z0-9_]\[[^\]]*(\$\(|`)/;

/** Builtins that take variable names as operands (and so evaluate a subscript in one). */
const NAME_BUILTINS = new Set([
  "read",
  "mapfile",
  "readarray",
  "printf",
  "test",
  "[",
  "wait",
  "getopts",
  "let",
]);

/** `[[ ]]` comparisons that evaluate both sides as arithmetic. */
const ARITHMETIC_TESTS = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"]);

const IDENTIFIER = /(?<![\w#])[A-Za-z_]\w*/g;
/** Shell parameters bash sets itself that never hold text another process chose. */
const HARMLESS = new Set([
  "RANDOM",
  "SECONDS",
  "LINENO",
  "EPOCHSECONDS",
  "SRANDOM",
  "BASHPID",
  "PPID",
  "UID",
  "EUID",
]);

class LineFacts {
  reason: string | undefined;
  /** Names an arithmetic context reads. */
  readonly arithmeticNames = new Set<string>();
  /** Names assigned a number literal or inside arithmetic. */
  readonly #numeric = new Set<string>();
  /** Names that may hold other text: assigned a non-number, a for-in variable, a builtin's operand. */
  readonly #tainted = new Set<string>();

  numericOnly(name: string): boolean {
    return HARMLESS.has(name) || (this.#numeric.has(name) && !this.#tainted.has(name));
  }

  visit(node: Node): void {
    if (this.reason !== undefined) return;
    switch (node.type) {
      case "arithmetic_expansion":
        this.#arithmetic(node.text.slice(3, -2));
        break;
      case "compound_statement":
        if (node.text.startsWith("((")) this.#arithmetic(node.text.slice(2, -2));
        break;
      case "c_style_for_statement":
        for (const field of ["initializer", "condition", "update"]) {
          for (const part of node.childrenForFieldName(field)) if (part !== null) this.#arithmetic(part.text);
        }
        break;
      case "subscript": {
        const index = node.childForFieldName("index");
        if (index !== null && !/^[@*]$/.test(index.text)) this.#arithmetic(index.text);
        break;
      }
      case "expansion":
        this.#expansion(node);
        break;
      case "variable_assignment":
        this.#assignment(node);
        break;
      case "for_statement": {
        const variable = node.childForFieldName("variable");
        if (variable !== null) this.#tainted.add(variable.text);
        break;
      }
      case "test_command":
        this.#test(node);
        break;
      case "declaration_command":
      case "unset_command":
        this.#nameOperands(node, node.type === "unset_command" ? "unset" : "declare");
        break;
      case "command":
        this.#command(node);
        break;
    }
    for (const child of node.namedChildren) if (child !== null) this.visit(child);
  }

  #arithmetic(expression: string): void {
    for (const match of expression.matchAll(IDENTIFIER)) {
      const name = match[0];
      const after = expression.slice((match.index ?? 0) + name.length);
      // `i=0`, `i++`, `i+=2` write a number; reading i is judged separately.
      if (
        /^\s*(=(?!=)|\+\+|--|[-+*/%]=)/.test(after) ||
        /(\+\+|--)\s*$/.test(expression.slice(0, match.index))
      ) {
        this.#numeric.add(name);
      }
      this.arithmeticNames.add(name);
    }
  }

  #expansion(node: Node): void {
    const text = node.text;
    if (/@P\}$/.test(text)) {
      this.reason =
        "prompt expansion (the @P operator) runs command substitutions found in a variable's value";
      return;
    }
    if (text.startsWith("${!") && !/^\$\{![A-Za-z_]\w*(\*|@|\[[@*]\])\}$/.test(text)) {
      this.reason =
        "indirect expansion (a ! before a name) reads a variable named at run time, whose subscript bash evaluates";
      return;
    }
    // `${s:offset:length}`: both numbers are arithmetic.
    const substring = /^\$\{[A-Za-z_]\w*(?:\[[^\]]*\])?:(?![-=?+])(.*)\}$/s.exec(text);
    if (substring?.[1] !== undefined) this.#arithmetic(substring[1]);
  }

  #assignment(node: Node): void {
    const name = node.childForFieldName("name");
    const value = node.childForFieldName("value");
    if (name === null || name.type !== "variable_name") return;
    if (value !== null && value.type === "number" && /^-?\d+$/.test(value.text)) this.#numeric.add(name.text);
    else this.#tainted.add(name.text);
  }

  #test(node: Node): void {
    for (const expression of descendants(node, ["binary_expression", "unary_expression"])) {
      const operator = expression.children.find((child) => child?.type === "test_operator")?.text;
      if (operator === undefined) continue;
      if (ARITHMETIC_TESTS.has(operator)) {
        for (const side of expression.namedChildren) {
          if (side !== null && side.type !== "test_operator") this.#arithmetic(side.text);
        }
      } else if ((operator === "-v" || operator === "-R") && expression.type === "unary_expression") {
        const operand = expression.namedChildren.find((child) => child?.type !== "test_operator");
        if (operand !== undefined && operand !== null && !isLiteral(operand)) {
          this.reason = "[[ -v ]] of a name only known at run time evaluates its subscript";
        }
      }
    }
  }

  #nameOperands(node: Node, what: string): void {
    for (const child of node.namedChildren) {
      if (child === null || child.type === "variable_assignment") continue;
      // `declare -n r=PATH; r=.` sets PATH through a reference no assignment names.
      if (/^-[A-Za-z]*n[A-Za-z]*$/.test(child.text) && what === "declare") {
        this.reason = "a name reference (declare -n) assigns a variable the line does not name";
        return;
      }
      if (!isLiteral(child)) {
        this.reason = `${what} of a name only known at run time evaluates its subscript`;
        return;
      }
      // A quoted operand (`export "PATH=."`, `declare -x 'BASH_FUNC_f%%=() { ...; }'`) is an
      // assignment the tree does not show as one: judge the name it assigns.
      const operand = literalText(child);
      const equals = operand.indexOf("=");
      if (equals > 0 && !/^-/.test(operand)) {
        const name = operand.slice(0, equals).replace(/\+$/, "");
        if (!/^[A-Za-z_]\w*(\[[^\]]*\])?$/.test(name) || changesPrograms(name.replace(/\[.*$/s, ""))) {
          this.reason = `${what} sets ${name}, which changes what a command name runs`;
          return;
        }
      }
      this.#tainted.add(child.text.replace(/=.*$/s, ""));
    }
  }

  #command(node: Node): void {
    const name = node.childForFieldName("name")?.text ?? "";
    const args = node.childrenForFieldName("argument").filter((arg): arg is Node => arg !== null);
    for (const arg of args) {
      // Any word could be a variable name a builtin fills (`read x`, `printf -v x`, `getopts o x`).
      if (/^[A-Za-z_]\w*$/.test(arg.text)) this.#tainted.add(arg.text);
    }
    const base = name.slice(name.lastIndexOf("/") + 1);
    if (!NAME_BUILTINS.has(base)) return;
    if (base === "let") {
      for (const arg of args) this.#arithmetic(literalText(arg));
      return;
    }
    const takesNames =
      base === "read" ||
      base === "mapfile" ||
      base === "readarray" ||
      base === "getopts" ||
      ((base === "test" || base === "[") && args.some((arg) => arg.text === "-v" || arg.text === "-R")) ||
      (base === "printf" && args.some((arg) => arg.text.startsWith("-v"))) ||
      (base === "wait" && args.some((arg) => arg.text.startsWith("-p") || /^-\w*p/.test(arg.text)));
    const program = args
      .map((arg) => literalText(arg).replace(/[[=].*$/s, ""))
      .find((word) => changesPrograms(word));
    if (takesNames && program !== undefined) {
      this.reason = `${base} ${program} changes what a command name runs`;
      return;
    }
    if (takesNames && args.some((arg) => !isLiteral(arg))) {
      this.reason = `${base} with an operand only known at run time may evaluate it as a variable name and its subscript`;
    }
  }
}

function isLiteral(node: Node): boolean {
  if (node.type === "word" || node.type === "raw_string" || node.type === "number") return true;
  if (node.type === "string") return node.namedChildren.every((child) => child?.type === "string_content");
  if (node.type === "concatenation")
    return node.namedChildren.every((child) => child !== null && isLiteral(child));
  return false;
}

function literalText(node: Node): string {
  if (node.type === "raw_string" || node.type === "string") return node.text.slice(1, -1);
  return node.text;
}

function descendants(node: Node, types: readonly string[]): Node[] {
  const found: Node[] = [];
  const walk = (current: Node) => {
    if (types.includes(current.type)) found.push(current);
    for (const child of current.namedChildren) if (child !== null) walk(child);
  };
  walk(node);
  return found;
}
