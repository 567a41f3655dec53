import { constants } from "node:fs";
import { open } from "node:fs/promises";
import {
  type ListResourcesResult,
  type ReadResourceResult,
  ResourceNotFoundError,
} from "@modelcontextprotocol/server";
import type { FileJournalBackend } from "../journal/file-store.js";
import { SESSION_ID_PATTERN, sessionPaths } from "../journal/session-path.js";

/** Journals are served as JSON Lines, one record a line, exactly the bytes on disk. */
export const JOURNAL_MIME = "application/jsonl";
const PREFIX = "harness://sessions/";
const SUFFIX = "/events.jsonl";

export function journalUri(sessionId: string): string {
  return `${PREFIX}${sessionId}${SUFFIX}`;
}

/** The session a resource URI names, or undefined for anything that is not exactly a journal URI. */
export function sessionOfUri(uri: string): string | undefined {
  if (!uri.startsWith(PREFIX) || !uri.endsWith(SUFFIX)) return undefined;
  const id = uri.slice(PREFIX.length, uri.length - SUFFIX.length);
  return SESSION_ID_PATTERN.test(id) ? id : undefined;
}

/** Every session journal of the workspace, the served session's own included. */
export async function listJournals(backend: FileJournalBackend): Promise<ListResourcesResult> {
  const ids = await backend.list();
  return {
    resources: ids.map((id) => ({
      uri: journalUri(id),
      name: `session ${id}`,
      description: "the session's journal: hash-chained, authenticated JSON records, one per line",
      mimeType: JOURNAL_MIME,
    })),
  };
}

/**
 * One journal's bytes. Opened without following a symlink (the state directory holds only
 * real files; see journal/state-dir.ts), so a resource read cannot be led outside it. An unknown
 * URI is the protocol's resource-not-found error.
 */
export async function readJournal(harnessDir: string, uri: string): Promise<ReadResourceResult> {
  const id = sessionOfUri(uri);
  if (id === undefined)
    throw new ResourceNotFoundError(uri, `not a session journal: ${uri} (expected ${PREFIX}ID${SUFFIX})`);
  let text: string;
  try {
    const handle = await open(sessionPaths(harnessDir, id).events, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      text = await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
  } catch {
    throw new ResourceNotFoundError(uri, `no session "${id}" in this workspace`);
  }
  return { contents: [{ uri, mimeType: JOURNAL_MIME, text }] };
}
