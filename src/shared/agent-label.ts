/**
 * Labels of sub-agents. A child session's id is its parent's id, "/", and its label, and its
 * journal lives in a folder of that name inside the parent's session folder; a script names a
 * child's replies by the same label. Both the journal and the providers need this one rule, so
 * it lives below them.
 */

/**
 * A label: letters, digits, '_' and '-', at most 32, starting with a letter or digit. No dot, so a
 * label is never a file the session folder holds (`events.jsonl`, `writer.lock`, a lock's
 * `.recover`), never `.` or `..`.
 */
export const AGENT_LABEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

/** How many labels an id may carry below its root: a child of a child ... at most this deep. */
export const MAX_AGENT_DEPTH = 8;

/**
 * Folders a session folder holds itself, which a child folder must never be mistaken for
 * (`artifacts/`). Compared without case: on a case-insensitive disk `Artifacts` is that folder.
 */
const RESERVED_LABELS: ReadonlySet<string> = new Set(["artifacts"]);

/** Whether `label` may name a sub-agent: the pattern, and not a folder the session folder keeps. */
export function isAgentLabel(label: unknown): boolean {
  return (
    typeof label === "string" && AGENT_LABEL_PATTERN.test(label) && !RESERVED_LABELS.has(label.toLowerCase())
  );
}

/** What a label must be, in words a person can act on. */
export const AGENT_LABEL_RULE =
  "a label is 1-32 characters from A-Z a-z 0-9 _ - starting with a letter or digit, and not 'artifacts'";
