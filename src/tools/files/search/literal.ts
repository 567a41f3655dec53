/**
 * What a JavaScript regular expression (no flags but perhaps `i`) says about the text it can match
 * on one line, read conservatively: when in doubt, nothing. Used to choose fast paths only; the
 * lines grep reports are always decided by the JavaScript RegExp itself (or, for a pattern that is
 * a plain literal, by an exact byte search that means the same).
 */

const SYNTAX = new Set(["\\", "^", "$", ".", "|", "?", "*", "+", "(", ")", "[", "]", "{", "}"]);

/**
 * The runs of literal text every match must contain, in order, plus whether the pattern is one
 * run and nothing else. A top-level `|` means no run is required. Groups, classes, anchors and
 * escapes other than escaped punctuation end a run; a character followed by `?`, `*` or `{` is
 * dropped (it may be absent), one followed by `+` ends its run.
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
    if (char === "\\") {
      const next = pattern[i + 1];
      if (next !== undefined && !/[A-Za-z0-9]/.test(next)) {
        i += 2;
        if (quantified(pattern, i)) {
          whole = false;
          end();
          continue;
        }
        current += next;
        continue;
      }
      return undefined; // \d, \b, \1, \x41, a trailing "\": treated as unknown
    }
    if (char === "|") return { runs: [], whole: false };
    if (char === "(" || char === "[") {
      const close = skipGroup(pattern, i);
      if (close === undefined) return undefined;
      whole = false;
      end();
      i = close;
      if (quantified(pattern, i)) i++;
      continue;
    }
    if (SYNTAX.has(char)) {
      whole = false;
      end();
      i++;
      continue;
    }
    i++;
    if (quantified(pattern, i)) {
      whole = false;
      // `a+` still needs one `a`; `a?`, `a*` and `a{0,2}` may have none.
      if (pattern[i] === "+") current += char;
      end();
      continue;
    }
    current += char;
  }
  end();
  return { runs, whole };
}

function quantified(pattern: string, i: number): boolean {
  const next = pattern[i];
  return next === "?" || next === "*" || next === "+" || next === "{";
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
