import { isAbsolute, join } from "node:path";
import {
  AGENT_LABEL_PATTERN,
  AGENT_LABEL_RULE,
  isAgentLabel,
  MAX_AGENT_DEPTH,
} from "../shared/agent-label.js";
import { JournalError } from "./store.js";

export { AGENT_LABEL_PATTERN, AGENT_LABEL_RULE, isAgentLabel, MAX_AGENT_DEPTH };

/**
 * A root session's id: a directory name, so no separators, no leading dot, at most 64 characters.
 * A sub-agent's session adds "/LABEL" per level (`isSessionId`).
 */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export const EVENTS_FILE = "events.jsonl";
export const LOCK_FILE = "writer.lock";

/**
 * Whether `id` names a session: a root id (SESSION_ID_PATTERN), then up to MAX_AGENT_DEPTH
 * "/LABEL" segments, one per sub-agent level. Every segment is a plain name (no "", ".", ".." and
 * no dot at all in a label), so the id joined onto the sessions directory stays beneath it.
 */
export function isSessionId(id: unknown): id is string {
  if (typeof id !== "string") return false;
  const [root, ...labels] = id.split("/");
  return (
    root !== undefined &&
    SESSION_ID_PATTERN.test(root) &&
    labels.length <= MAX_AGENT_DEPTH &&
    labels.every((label) => isAgentLabel(label))
  );
}

/** Whether `id` names a root session (no sub-agent label). */
export function isRootSessionId(id: unknown): id is string {
  return typeof id === "string" && SESSION_ID_PATTERN.test(id);
}

export function assertSessionId(sessionId: unknown): asserts sessionId is string {
  if (!isSessionId(sessionId)) {
    const shown = typeof sessionId === "string" ? JSON.stringify(sessionId.slice(0, 80)) : typeof sessionId;
    throw new JournalError(
      "INVALID_SESSION_ID",
      `invalid session id ${shown}: use 1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit ` +
        `(a sub-agent's session: that id, then up to ${MAX_AGENT_DEPTH} "/LABEL"; ${AGENT_LABEL_RULE})`,
    );
  }
}

/** The session id of `parent`'s sub-agent `label`: `PARENT/LABEL`. Throws JournalError("INVALID_SESSION_ID"). */
export function childSessionId(parent: string, label: string): string {
  assertSessionId(parent);
  if (!isAgentLabel(label)) {
    const shown = JSON.stringify(label.slice(0, 80));
    throw new JournalError("INVALID_SESSION_ID", `invalid sub-agent label ${shown}: ${AGENT_LABEL_RULE}`);
  }
  if (agentDepth(parent) >= MAX_AGENT_DEPTH) {
    throw new JournalError(
      "INVALID_SESSION_ID",
      `session ${parent} is a sub-agent ${MAX_AGENT_DEPTH} levels deep: no sub-agent can be started below it`,
    );
  }
  return `${parent}/${label}`;
}

/** A sub-agent's session is created only inside a recorded parent: the refusal when it is not. */
export function parentNotFound(sessionId: string, parent: string): JournalError {
  return new JournalError(
    "SESSION_NOT_FOUND",
    `session ${sessionId} cannot be created: its parent session ${parent} does not exist`,
  );
}

/** The session that started `sessionId` as a sub-agent; undefined for a root session. */
export function parentSessionId(sessionId: string): string | undefined {
  assertSessionId(sessionId);
  const cut = sessionId.lastIndexOf("/");
  return cut < 0 ? undefined : sessionId.slice(0, cut);
}

/** The labels below the root: "" for a root session, "a/b" for `ROOT/a/b`. */
export function agentPath(sessionId: string): string {
  assertSessionId(sessionId);
  const cut = sessionId.indexOf("/");
  return cut < 0 ? "" : sessionId.slice(cut + 1);
}

/** The root session a sub-agent belongs to (the id itself for a root). */
export function rootSessionId(sessionId: string): string {
  assertSessionId(sessionId);
  const cut = sessionId.indexOf("/");
  return cut < 0 ? sessionId : sessionId.slice(0, cut);
}

/** How many sub-agent levels below its root `sessionId` is: 0 for a root. */
export function agentDepth(sessionId: string): number {
  assertSessionId(sessionId);
  return sessionId.split("/").length - 1;
}

export function assertHarnessDir(harnessDir: string): void {
  if (!isAbsolute(harnessDir)) {
    throw new TypeError("the journal store needs the absolute path of the .harness directory");
  }
}

export interface SessionPaths {
  sessionsDir: string;
  sessionDir: string;
  events: string;
  lock: string;
}

/** The directory holding one subdirectory per session. */
export function sessionsDirOf(harnessDir: string): string {
  assertHarnessDir(harnessDir);
  return join(harnessDir, "sessions");
}

/**
 * Where a session lives: `<harnessDir>/sessions/<sessionId>/{events.jsonl,writer.lock}`. A
 * sub-agent's folder is inside its parent's: `sessions/PARENT/LABEL/events.jsonl`.
 */
export function sessionPaths(harnessDir: string, sessionId: string): SessionPaths {
  const sessionsDir = sessionsDirOf(harnessDir);
  assertSessionId(sessionId);
  const sessionDir = join(sessionsDir, ...sessionId.split("/"));
  return {
    sessionsDir,
    sessionDir,
    events: join(sessionDir, EVENTS_FILE),
    lock: join(sessionDir, LOCK_FILE),
  };
}
