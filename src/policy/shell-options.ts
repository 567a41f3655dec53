/**
 * Reading the options of a program that runs another program (`timeout -s KILL 5 cmd`), as that
 * program's getopt reads them: short options clustered (`-sKILL`, `-xn`), long options with `=`
 * or the next word as their value and abbreviated to any unique prefix (`--sig KILL`), and the
 * first word that is not an option ends them (these programs stop there, getopt's `+`).
 *
 * Every option a program accepts must be in its table: a word that looks like an option and is
 * not there could take the next word as its value, and the command would then be another word
 * than the one the rules see. So an unknown option, an option whose value is missing, or a word
 * only known when the line runs, ends the reading with `unknown`.
 */

/** How an option takes a value: not at all, always (attached or the next word), or only attached. */
export type Arity = "none" | "value" | "attached";

/** A program's options: `"-n --adjustment": "value"` names one option by all its spellings. */
export type OptionTable = Readonly<Record<string, Arity>>;

export interface OptionWord {
  value: string;
  static: boolean;
}

export interface ReadOption {
  /** The option's first spelling in the table (`-n` for `--adjustment`). */
  name: string;
  value?: string;
}

export type OptionsRead =
  | { kind: "read" /** Index of the first word after the options. */; index: number; options: ReadOption[] }
  | { kind: "unknown"; reason: string };

interface Compiled {
  short: Map<string, { name: string; arity: Arity }>;
  long: Map<string, { name: string; arity: Arity }>;
}

const compiled = new WeakMap<OptionTable, Compiled>();

function compile(table: OptionTable): Compiled {
  let result = compiled.get(table);
  if (result !== undefined) return result;
  result = { short: new Map(), long: new Map() };
  for (const [spellings, arity] of Object.entries(table)) {
    const names = spellings.split(" ");
    const name = names[0] as string;
    for (const spelling of names) {
      if (spelling.startsWith("--")) result.long.set(spelling.slice(2), { name, arity });
      else result.short.set(spelling.slice(1), { name, arity });
    }
  }
  compiled.set(table, result);
  return result;
}

export interface ReadOptionsSettings {
  /** `-5`, `--5`, `-+5` are options of their own (nice's legacy adjustment). */
  numeric?: boolean;
  /** `-` alone is an option (env: the same as -i), not the first operand. */
  dashIsOption?: boolean;
}

/** Read `program`'s options from the start of `words` by its table. */
export function readOptions(
  program: string,
  words: readonly OptionWord[],
  table: OptionTable,
  settings: ReadOptionsSettings = {},
): OptionsRead {
  const { short, long } = compile(table);
  const options: ReadOption[] = [];
  const unknown = (what: string): OptionsRead => ({ kind: "unknown", reason: `${program} ${what}` });
  let i = 0;
  while (i < words.length) {
    const word = words[i] as OptionWord;
    if (!word.static) return unknown("has an option or operand that is only known when it runs");
    const value = word.value;
    if (value === "--") return { kind: "read", index: i + 1, options };
    if (value === "-" && settings.dashIsOption === true) {
      options.push({ name: "-" });
      i++;
      continue;
    }
    if (!value.startsWith("-") || value === "-") return { kind: "read", index: i, options };
    if (settings.numeric === true && /^-[-+]?\d+$/.test(value)) {
      options.push({ name: "-N", value: value.slice(1) });
      i++;
      continue;
    }
    if (value.startsWith("--")) {
      const equals = value.indexOf("=");
      const given = equals === -1 ? value.slice(2) : value.slice(2, equals);
      const exact = long.get(given);
      const prefixed = [...long.keys()].filter((name) => name.startsWith(given));
      const distinct = new Set(prefixed.map((name) => long.get(name)?.name));
      const option =
        exact ?? (given !== "" && distinct.size === 1 ? long.get(prefixed[0] as string) : undefined);
      if (option === undefined) return unknown(`option --${given} is not one harness knows`);
      if (option.arity === "none") {
        if (equals !== -1) return unknown(`option --${given} takes no value`);
        options.push({ name: option.name });
        i++;
      } else if (equals !== -1) {
        options.push({ name: option.name, value: value.slice(equals + 1) });
        i++;
      } else if (option.arity === "attached") {
        options.push({ name: option.name });
        i++;
      } else {
        const next = words[i + 1];
        if (next === undefined || !next.static) return unknown(`option --${given} has no known value`);
        options.push({ name: option.name, value: next.value });
        i += 2;
      }
      continue;
    }
    const cluster = value.slice(1);
    let advance = 1;
    for (let j = 0; j < cluster.length; j++) {
      const letter = cluster[j] as string;
      const option = short.get(letter);
      if (option === undefined) return unknown(`option -${letter} is not one harness knows`);
      if (option.arity === "none") {
        options.push({ name: option.name });
        continue;
      }
      const rest = cluster.slice(j + 1);
      if (rest !== "" || option.arity === "attached") {
        options.push(rest === "" ? { name: option.name } : { name: option.name, value: rest });
      } else {
        const next = words[i + 1];
        if (next === undefined || !next.static) return unknown(`option -${letter} has no known value`);
        options.push({ name: option.name, value: next.value });
        advance = 2;
      }
      break;
    }
    i += advance;
  }
  return { kind: "read", index: i, options };
}
