/**
 * What a JavaScript regular expression (no flags but perhaps `i`) says about the text it can match
 * on one line, read conservatively: when in doubt, nothing. Used to choose fast paths only; the
 * lines grep reports are always decided by the JavaScript RegExp itself (or, for a pattern that is
 * a plain literal, by an exact byte search that means the same).
 */

const SYNTAX = new Set(["\\", "^", "$", ".", "|", "?", "*", "+", "(", ")", "[", "]", "{", "}"]);

/**
 * The runs of literal text every match must contain, plus whether the pattern is one run and
 * nothing else. A top-level `|` means no run is required. Groups, classes, anchors and escapes
 * other than escaped punctuation end a run; a character followed by `?`, `*` or `{` is dropped
 * (it may be absent), one followed by `+` ends its run. Anything unusual (`\x41`, `\p{L}`, a
 * brace that is not a quantifier) makes the answer undefined.
 */
function literalRuns(pattern: string): { runs: string[]; whole: boolean } | undefined {
  const runs: string[] = [];
  let current = "";
  let whole = true;
  const end = (): void => {
    if (current !== "") runs.push(current);
    current = "";
  };
  let i = 0;
  while (i < pattern.length) {
    const char = pattern[i] as string;
    let atom: string | undefined; // a literal character, or undefined for any other atom
    if (char === "\\") {
      const next = pattern[i + 1];
      if (next === undefined) return undefined;
      if (!/[A-Za-z0-9]/.test(next)) {
        atom = next;
      } else if (
        !/[dDwWsSbBfnrtv]/.test(next) &&
        !(/[1-9]/.test(next) && !/[0-9]/.test(pattern[i + 2] ?? ""))
      ) {
        return undefined;
      }
      i += 2;
    } else if (char === "|") {
      return { runs: [], whole: false };
    } else if (char === "(" || char === "[") {
      const close = skipGroup(pattern, i);
      if (close === undefined) return undefined;
      i = close;
    } else if (char === "{" || char === "}") {
      return undefined;
    } else {
      if (!SYNTAX.has(char)) atom = char;
      i++;
    }
    const after = skipQuantifier(pattern, i);
    if (after === undefined) return undefined;
    const quantifier = pattern[i];
    i = after.next;
    if (atom === undefined || after.quantified) {
      whole = false;
      // `a+` still needs one `a`; `a?`, `a*` and `a{0,2}` may have none.
      if (atom !== undefined && quantifier === "+") current += atom;
      end();
      continue;
    }
    current += atom;
  }
  end();
  return { runs, whole };
}

/** The index after a quantifier at `i` (`?`, `*`, `+`, `{n}`, `{n,}`, `{n,m}`, each maybe lazy). */
function skipQuantifier(pattern: string, i: number): { next: number; quantified: boolean } | undefined {
  const char = pattern[i];
  let next: number;
  if (char === "?" || char === "*" || char === "+") {
    next = i + 1;
  } else if (char === "{") {
    const braces = /^\{\d+(,\d*)?\}/.exec(pattern.slice(i));
    if (braces === null) return undefined;
    next = i + braces[0].length;
  } else {
    return { next: i, quantified: false };
  }
  if (pattern[next] === "?") next++;
  return { next, quantified: true };
}

/** Index after the group or class opening at `start` (escapes and nested groups respected). */
function skipGroup(pattern: string, start: number): number | undefined {
  let depth = 0;
  let inClass = false;
  for (let i = start; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === "\\") {
      i++;
      continue;
    }
    if (inClass) {
      if (char === "]") {
        inClass = false;
        if (depth === 0) return i + 1;
      }
      continue;
    }
    if (char === "[") inClass = true;
    else if (char === "(") depth++;
    else if (char === ")") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return undefined;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Characters a byte search cannot stand for: line breaks, NUL, U+FFFD (a decoder's replacement). */
function searchable(text: string): boolean {
  return text !== "" && !LONE_SURROGATE.test(text) && !/[\r\n\0\uFFFD]/.test(text);
}

/** The literal the whole pattern is (e.g. `TODO`, `a\.b`), when it is one and a byte search means the same. */
export function wholeLiteral(pattern: string): string | undefined {
  const parsed = literalRuns(pattern);
  if (parsed === undefined || !parsed.whole || parsed.runs.length !== 1) return undefined;
  const [text] = parsed.runs as [string];
  return searchable(text) ? text : undefined;
}

/**
 * The longest literal every match of the pattern contains, for a pre-filter that must never drop a
 * file the pattern matches. With `ignoreCase` only ASCII literals qualify: for them every other
 * engine's case folding is at least as wide as JavaScript's.
 */
export function requiredLiteral(pattern: string, ignoreCase: boolean): string | undefined {
  const parsed = literalRuns(pattern);
  if (parsed === undefined) return undefined;
  let best: string | undefined;
  for (const run of parsed.runs) {
    if (!searchable(run) || (ignoreCase && !/^[\x20-\x7e]*$/.test(run))) continue;
    if (best === undefined || run.length > best.length) best = run;
  }
  return best;
}
