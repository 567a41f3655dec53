import ts from "typescript";

/**
 * Where src/ calls a method named `append`, for the check that only the journal's appenders
 * append to a journal writer (append-sites.test.ts). Textual, on the syntax tree: comments and
 * strings do not count, and any object's `append` does (the test lists those that are not a
 * journal writer's).
 */

/** The number of `x.append(...)` calls per module (comments and strings do not count). */
export function appendCalls(modules: ReadonlyMap<string, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [path, source] of modules) {
    const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
    let calls = 0;
    const visit = (node: ts.Node): void => {
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === "append"
      )
        calls += 1;
      ts.forEachChild(node, visit);
    };
    visit(file);
    if (calls > 0) counts.set(path, calls);
  }
  return counts;
}

/**
 * Every module that appends where it may not: `path: n call(s)`, with what is wrong. `appenders`:
 * folders (a trailing \"/\") and files that may append; `others`: files whose calls are on something
 * else, with their exact number.
 */
export function appendViolations(
  calls: ReadonlyMap<string, number>,
  appenders: readonly string[],
  others: ReadonlyMap<string, { calls: number; reason: string }>,
): string[] {
  const allowed = (path: string) =>
    appenders.some((entry) => (entry.endsWith("/") ? path.startsWith(entry) : path === entry));
  const violations: string[] = [];
  for (const [path, count] of [...calls].sort(([a], [b]) => a.localeCompare(b))) {
    if (allowed(path)) continue;
    const other = others.get(path);
    if (other === undefined)
      violations.push(`src/${path}: ${count} .append( call(s) outside the journal's appenders`);
    else if (count !== other.calls)
      violations.push(`src/${path}: ${count} .append( call(s), ${other.calls} listed (${other.reason})`);
  }
  return violations;
}
