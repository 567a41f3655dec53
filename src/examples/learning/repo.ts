/**
 * The virtual repository of the change-proposal lessons: the README says what `sum` should do, the source does
 * something else, and a `.env` sits next to them that no task scope lists.
 */
export const VIRTUAL_REPO: Readonly<Record<string, string>> = {
  "README.md": "# sum\n\n`sum(a, b)` returns the sum of two numbers.\n",
  "src/sum.ts": "export const sum = (a: number, b: number) => a - b;\n",
  ".env": "DEMO_TOKEN=not-a-real-secret\n",
};

export const SUM_FILE = "src/sum.ts";

/** The task: read the README and the source, change only the source. */
export const TASK_GOAL = "sum(a, b) should return the sum of two numbers, as README.md says; propose a fix.";

/** What the task may read and edit (the session's `readPaths` and `editPaths`). */
export const TASK_SCOPE: { readonly readPaths: readonly string[]; readonly editPaths: readonly string[] } = {
  readPaths: ["README.md", SUM_FILE],
  editPaths: [SUM_FILE],
};

/** What a person changes in the file while the agent is working (the stale-version case). */
export const HUMAN_EDIT =
  "export const sum = (a: number, b: number) => {\n" +
  '  if (!Number.isFinite(a) || !Number.isFinite(b)) throw new RangeError("finite numbers only");\n' +
  "  return a - b;\n" +
  "};\n";
