/**
 * What the session layer has to tell a person (a warning, a note, progress on long work). The
 * library prints nothing: every notice leaves through the door's `notify`, and only the CLI
 * decides whether and how it reaches a terminal.
 */
export interface SessionNotice {
  level: "warning" | "note" | "progress";
  /** Plain text, not escaped: it may quote paths or names from the workspace. */
  message: string;
}

export type Notify = (notice: SessionNotice) => void;

/** The default of a library caller that gave no listener: notices are dropped, never printed. */
export const IGNORE_NOTICES: Notify = () => {};

/** A notice as one line of an operator's log (a server's, a worker's): notes say so. */
export function noticeLine(notice: SessionNotice): string {
  return notice.level === "note" ? `note: ${notice.message}` : notice.message;
}
