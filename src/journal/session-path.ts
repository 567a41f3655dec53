import { isAbsolute, join } from "node:path";
import { JournalError } from "./store.js";

/** Session ids are directory names: no separators, no leading dot, at most 64 characters. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export const EVENTS_FILE = "events.jsonl";
export const LOCK_FILE = "writer.lock";

export function assertSessionId(sessionId: unknown): asserts sessionId is string {
  if (typeof sessionId !== "string" || !SESSION_ID_PATTERN.test(sessionId)) {
    const shown = typeof sessionId === "string" ? JSON.stringify(sessionId.slice(0, 80)) : typeof sessionId;
    throw new JournalError(
      "INVALID_SESSION_ID",
      `invalid session id ${shown}: use 1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit`,
    );
  }
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

/** Where a session lives: `<harnessDir>/sessions/<sessionId>/{events.jsonl,writer.lock}`. */
export function sessionPaths(harnessDir: string, sessionId: string): SessionPaths {
  const sessionsDir = sessionsDirOf(harnessDir);
  assertSessionId(sessionId);
  const sessionDir = join(sessionsDir, sessionId);
  return {
    sessionsDir,
    sessionDir,
    events: join(sessionDir, EVENTS_FILE),
    lock: join(sessionDir, LOCK_FILE),
  };
}
