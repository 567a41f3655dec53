import { constants } from "node:fs";
import { open } from "node:fs/promises";
import {
  type ListResourcesResult,
  type ReadResourceResult,
  ResourceNotFoundError,
} from "@modelcontextprotocol/server";
import { SESSION_ID_PATTERN, sessionPaths } from "../journal/session-path.js";
import { readAccess } from "../runtime/authorize.js";
import type { PermissionDecision, PermissionPort } from "../runtime/ports.js";
import type { JsonValue } from "../shared/json.js";
import type { EffectClass } from "../tools/tool.js";

/** Journals are served as JSON Lines, one record a line, exactly the bytes on disk. */
export const JOURNAL_MIME = "application/jsonl";
const PREFIX = "harness://sessions/";
const SUFFIX = "/events.jsonl";

/** The effect classes a call can be recorded with (anything else is not a call harness made). */
const EFFECTS: ReadonlySet<string> = new Set<EffectClass>([
  "pure",
  "read_only",
  "local_write",
  "process_execution",
  "network_read",
  "network_write",
  "external_side_effect",
  "destructive",
]);

/** Argument names whose string values (or arrays of strings) are files a tool acts on. */
const PATH_KEYS = new Set(["path", "paths", "file", "files", "file_path"]);

export function journalUri(sessionId: string): string {
  return `${PREFIX}${sessionId}${SUFFIX}`;
}

/** The session a resource URI names, or undefined for anything that is not exactly a journal URI. */
export function sessionOfUri(uri: string): string | undefined {
  if (!uri.startsWith(PREFIX) || !uri.endsWith(SUFFIX)) return undefined;
  const id = uri.slice(PREFIX.length, uri.length - SUFFIX.length);
  return SESSION_ID_PATTERN.test(id) ? id : undefined;
}

/** What decides which journals a client may read: the sessions it started and the server's policy. */
export interface JournalAccess {
  harnessDir: string;
  /** The sessions this client started (its served session, its harness_run sessions). */
  started(): readonly string[];
  /** The server's policy: a journal is served only if the calls it holds would still be allowed. */
  permissions: PermissionPort;
}

/**
 * The journals this client may read: only sessions it started, and of those only the ones that
 * hold nothing the policy would refuse the client through tools (see `withheldBecause`).
 */
export async function listJournals(access: JournalAccess): Promise<ListResourcesResult> {
  const resources: ListResourcesResult["resources"] = [];
  for (const id of access.started()) {
    const text = await journalText(access.harnessDir, id);
    if (text === undefined || (await withheldBecause(text, access.permissions)) !== undefined) continue;
    resources.push({
      uri: journalUri(id),
      name: `session ${id}`,
      description: "the session's journal: hash-chained, authenticated JSON records, one per line",
      mimeType: JOURNAL_MIME,
    });
  }
  return { resources };
}

/**
 * One journal's bytes, if this client started the session and its content passes the policy.
 * A session of another client (or of an earlier process) answers exactly like one that does not
 * exist, so a client cannot even learn which sessions others ran.
 */
export async function readJournal(access: JournalAccess, uri: string): Promise<ReadResourceResult> {
  const id = sessionOfUri(uri);
  if (id === undefined)
    throw new ResourceNotFoundError(uri, `not a session journal: ${uri} (expected ${PREFIX}ID${SUFFIX})`);
  const missing = () => new ResourceNotFoundError(uri, `no session "${id}" of this client in this workspace`);
  if (!access.started().includes(id)) throw missing();
  const text = await journalText(access.harnessDir, id);
  if (text === undefined) throw missing();
  const why = await withheldBecause(text, access.permissions);
  if (why !== undefined)
    throw new ResourceNotFoundError(uri, `the journal of session "${id}" is withheld: ${why}`);
  return { contents: [{ uri, mimeType: JOURNAL_MIME, text }] };
}

/**
 * The complete records of a journal (up to its last newline: a record being appended is left for
 * the next read). Opened without following a symlink (the state directory holds only real files;
 * see journal/state-dir.ts), so a resource read cannot be led outside it.
 */
async function journalText(harnessDir: string, id: string): Promise<string | undefined> {
  try {
    const handle = await open(sessionPaths(harnessDir, id).events, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const text = await handle.readFile("utf8");
      return text.slice(0, text.lastIndexOf("\n") + 1);
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
}

/**
 * Why a journal must not be served, or undefined when it may. A journal carries what its calls
 * returned, so it is held to what the client could get through tools under the server's policy
 * now: every call it records as started must not be denied, and every file such a call names
 * must be one read_file may read without asking. One refused call withholds the whole journal
 * (rather than serving it with parts cut out): a journal is hash-chained, so a cut copy would not
 * verify, and what a result reveals of a file is not always attributable to one field.
 */
export async function withheldBecause(
  text: string,
  permissions: PermissionPort,
): Promise<string | undefined> {
  const noAsk = { covers: () => false, add: () => undefined };
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let record: { type?: unknown; data?: unknown };
    try {
      record = JSON.parse(line) as { type?: unknown; data?: unknown };
    } catch {
      return "a record that is not JSON";
    }
    if (record.type !== "tool.started") continue;
    const data = record.data as { name?: unknown; effect?: unknown; arguments?: unknown };
    if (typeof data?.name !== "string" || typeof data.arguments !== "object" || data.arguments === null)
      return "a call record without a tool and arguments";
    const args = data.arguments as Record<string, JsonValue>;
    if (typeof data.effect !== "string" || !EFFECTS.has(data.effect))
      return `it holds a ${data.name} call of an unknown effect`;
    let decision: PermissionDecision | undefined;
    try {
      decision = await permissions.decide({
        tool: data.name,
        effect: data.effect as EffectClass,
        arguments: args,
      });
    } catch {
      decision = undefined;
    }
    if (decision === undefined || decision.decision === "deny")
      return `it holds a ${data.name} call the policy denies${decision ? ` (${decision.reason})` : ""}`;
    for (const path of pathsIn(args)) {
      if ((await readAccess(path, { permissions, grants: noAsk })) !== "allowed")
        return `it holds a ${data.name} call on ${JSON.stringify(path)}, which the policy does not let read_file read`;
    }
  }
  return undefined;
}

/** Every file a call's arguments name (at any depth), by the argument names file tools use. */
function pathsIn(value: JsonValue, key?: string): string[] {
  if (typeof value === "string") return key !== undefined && PATH_KEYS.has(key) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap((item) => pathsIn(item, key));
  if (value !== null && typeof value === "object")
    return Object.entries(value).flatMap(([name, item]) => pathsIn(item as JsonValue, name));
  return [];
}
