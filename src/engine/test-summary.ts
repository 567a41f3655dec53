/**
 * How many tests a check's output says failed, read from the summary formats of common runners.
 * The goal loop uses it as a finer measure of progress than "which checks pass": a suite going
 * from 3 failing tests to 1 is progress even while its command still exits non-zero.
 *
 * Only the summary a runner prints once per run is read (never a count of lines that look like
 * failures, which a test's own output can fake in any number): vitest's `Tests  2 failed | 5
 * passed`, jest's `Tests:       2 failed, 5 passed, 7 total`, pytest's `=== 2 failed, 5 passed in
 * 0.12s ===`, TAP's `# fail 2`, JUnit XML's `failures="2" errors="1"` on its root element, and go
 * test's `--- FAIL:` lines (go prints no count). Of each runner the last summary counts (a runner
 * prints its total last); where several runners' summaries appear (a script running two suites)
 * their counts add up. Undefined when no known summary is found: then only the checks'
 * pass/fail is progress.
 */
export function failingTests(output: string): number | undefined {
  const counts = [vitest(output), jest(output), pytest(output), tap(output), junit(output), goTest(output)];
  const known = counts.filter((count): count is number => count !== undefined);
  return known.length === 0 ? undefined : known.reduce((sum, count) => sum + count, 0);
}

/** The last match of `pattern` in `text` (summaries come at the end). */
function last(text: string, pattern: RegExp): RegExpExecArray | undefined {
  let found: RegExpExecArray | undefined;
  for (const match of text.matchAll(pattern)) found = match as RegExpExecArray;
  return found;
}

/** `Tests  2 failed | 5 passed (7)` (a summary with none failed says only `passed`). */
function vitest(output: string): number | undefined {
  const line = last(output, /^\s*Tests\s{2,}([^\n]*\bpassed\b[^\n]*|[^\n]*\bfailed\b[^\n]*)\(\d+\)\s*$/gm);
  if (line === undefined) return undefined;
  return Number(/(\d+) failed/.exec(line[1] ?? "")?.[1] ?? 0);
}

/** `Tests:       2 failed, 5 passed, 7 total`. */
function jest(output: string): number | undefined {
  const line = last(output, /^Tests:\s+([^\n]*\b\d+ total)\s*$/gm);
  if (line === undefined) return undefined;
  return Number(/(\d+) failed/.exec(line[1] ?? "")?.[1] ?? 0);
}

/** `==== 2 failed, 5 passed in 0.12s ====` (also `1 error`, counted as a failure). */
function pytest(output: string): number | undefined {
  const line = last(output, /^=+ ([^\n=]*\bin [\d.]+s[^\n=]*) =+\s*$/gm);
  if (line === undefined) return undefined;
  const text = line[1] ?? "";
  if (!/\b(passed|failed|error|errors|skipped|no tests ran)\b/.test(text)) return undefined;
  const failed = Number(/(\d+) failed/.exec(text)?.[1] ?? 0);
  const errors = Number(/(\d+) errors?\b/.exec(text)?.[1] ?? 0);
  return failed + errors;
}

/** TAP producers' closing comment block: `# fail 2` (node --test, tape). */
function tap(output: string): number | undefined {
  const line = last(output, /^# fail (\d+)\s*$/gm);
  return line === undefined ? undefined : Number(line[1]);
}

/** JUnit XML printed to the output: the root element's failures plus errors. */
function junit(output: string): number | undefined {
  const root = /<(testsuites|testsuite)\b([^>]*)>/.exec(output);
  if (root === null) return undefined;
  const attribute = (name: string) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(root[2] ?? "")?.[1] ?? 0);
  if (!/\b(failures|errors|tests)="\d+"/.test(root[2] ?? "")) return undefined;
  return attribute("failures") + attribute("errors");
}

/** go test: one `--- FAIL: TestName` line per failing test, and a final `FAIL`/`ok` per package. */
function goTest(output: string): number | undefined {
  if (!/^(ok|FAIL|PASS)\s*(\t|$)/m.test(output) && !/^--- (FAIL|PASS):/m.test(output)) return undefined;
  return [...output.matchAll(/^--- FAIL: /gm)].length;
}
