/**
 * A JavaScript regular expression (no flags but perhaps `i`) rewritten for ripgrep so that rg
 * matches at least every line the JavaScript RegExp matches: rg's answer is then a sound filter
 * (a file rg does not name cannot match) and the lines shown are still decided by the RegExp.
 * Undefined when the pattern uses something whose meaning differs in a way this rewrite does not
 * cover; grep then matches that pattern in JavaScript alone.
 *
 * The dialects differ where JavaScript (without the `u` flag) works on UTF-16 code units and with
 * ASCII classes, and rg on code points with Unicode classes:
 * - `\d`, `\w`, `\S` are wider in rg (Unicode): kept. `\s` in rg lacks U+FEFF: added.
 * - `\D`, `\W`, `\b`, `\B` are narrower in rg: not rewritten (JavaScript alone).
 * - `.`, a negated class and `\S` can consume half of a surrogate pair in JavaScript; in rg they
 *   become optional, so a match that splits a pair still has an rg counterpart.
 * - `$` in JavaScript sees the line without its "\r": `\r?$` in rg.
 * - Lookaround, backreferences, named groups, `\x`/`\u`/`\c`/`\0`/`\p` escapes, `\n`, empty
 *   classes and characters outside the BMP: not rewritten.
 * - Case-insensitive: rg's simple case folding relates every pair JavaScript's upper-casing does.
 * - What JavaScript takes literally (a `{` that is no quantifier, a lone `]` or `}`) is escaped.
 */

/** Characters rg gives a meaning to outside a class, so escaped when meant literally. */
const RG_META = new Set([..."\\.+*?()|[]{}^$#&-~"]);
/** Characters rg gives a meaning to inside a class. */
const RG_CLASS_META = new Set([..."\\[]^&-~"]);

const QUANTIFIER = /^\{\d+(,\d*)?\}/;

export function ripgrepPattern(pattern: string): string | undefined {
  let out = "";
  let i = 0;
  let depth = 0;
  // A quantifier is copied as it stands: one with nothing to repeat is a SyntaxError the RegExp
  // has already raised, and every rewritten atom is a group it applies to whole.
  while (i < pattern.length) {
    const code = pattern.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdfff) return undefined;
    const char = pattern[i] as string;
    if (char === "\\") {
      const atom = escapeAtom(pattern[i + 1]);
      if (atom === undefined) return undefined;
      out += atom;
      i += 2;
    } else if (char === "[") {
      const klass = classAtom(pattern, i);
      if (klass === undefined) return undefined;
      out += klass.text;
      i = klass.end;
    } else if (char === "(") {
      if (pattern[i + 1] === "?") {
        if (pattern[i + 2] !== ":") return undefined;
        out += "(?:";
        i += 3;
      } else {
        out += "(";
        i += 1;
      }
      depth++;
    } else if (char === ")") {
      if (depth === 0) return undefined;
      depth--;
      out += ")";
      i += 1;
    } else if (char === "{") {
      const quantifier = QUANTIFIER.exec(pattern.slice(i))?.[0];
      out += quantifier ?? "\\{";
      i += quantifier?.length ?? 1;
    } else if (char === "}" || char === "]") {
      out += `\\${char}`;
      i += 1;
    } else if (char === ".") {
      out += "(?:(?:.)?)";
      i += 1;
    } else if (char === "$") {
      out += "(?:\\r?$)";
      i += 1;
    } else if (char === "*" || char === "+" || char === "?" || char === "|" || char === "^") {
      out += char;
      i += 1;
    } else {
      out += RG_META.has(char) ? `\\${char}` : char;
      i += 1;
    }
  }
  return depth === 0 ? out : undefined;
}

/** An escape outside a class, or undefined when it has no rewrite. */
function escapeAtom(next: string | undefined): string | undefined {
  if (next === undefined) return undefined;
  if (/[dwtrfv]/.test(next)) return `\\${next}`;
  if (next === "s") return "[\\s\\x{FEFF}]";
  if (next === "S") return "(?:(?:\\S)?)";
  if (/[A-Za-z0-9]/.test(next)) return undefined;
  const code = next.charCodeAt(0);
  if (code >= 0xd800 && code <= 0xdfff) return undefined;
  return RG_META.has(next) ? `\\${next}` : next;
}

/**
 * A class from `[` at `start`: its rg text and the index after its `]`. Negated classes, and
 * those reaching into the surrogate range, may match half a pair in JavaScript: made optional.
 */
function classAtom(pattern: string, start: number): { text: string; end: number } | undefined {
  let i = start + 1;
  const negated = pattern[i] === "^";
  if (negated) i++;
  // `[]` matches nothing and `[^]` anything in JavaScript; neither is worth a rewrite.
  if (pattern[i] === "]") return undefined;
  let body = "";
  let loose = negated;
  while (i < pattern.length && pattern[i] !== "]") {
    const char = pattern[i] as string;
    const code = pattern.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdfff) return undefined;
    if (char === "\\") {
      const next = pattern[i + 1];
      if (next === undefined) return undefined;
      // Negated, rg's wider Unicode \d, \w and \S would exclude more than JavaScript's.
      if (negated && /[dwS]/.test(next)) return undefined;
      if (/[dwtrfv]/.test(next)) body += `\\${next}`;
      else if (next === "s") body += "\\s\\x{FEFF}";
      else if (next === "S") {
        body += "\\S";
        loose = true;
      } else if (/[A-Za-z0-9]/.test(next)) return undefined;
      else body += RG_CLASS_META.has(next) ? `\\${next}` : next;
      i += 2;
      continue;
    }
    if (char === "-" && body !== "" && pattern[i + 1] !== "]") {
      // A range: JavaScript has already checked its ends are in order.
      const end = pattern[i + 1] as string;
      if (end === "\\" || end === "[") return undefined;
      if (end.charCodeAt(0) >= 0xd800) loose = true;
      body += `-${RG_CLASS_META.has(end) ? `\\${end}` : end}`;
      i += 2;
      continue;
    }
    body += RG_CLASS_META.has(char) ? `\\${char}` : char;
    i += 1;
  }
  if (i >= pattern.length) return undefined;
  const text = `[${negated ? "^" : ""}${body}]`;
  return { text: loose ? `(?:(?:${text})?)` : text, end: i + 1 };
}
