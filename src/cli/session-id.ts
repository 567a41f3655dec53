import { isRootSessionId, isSessionId } from "../journal/session-path.js";
import { UsageError } from "../session/usage-error.js";
import { type OpenedWorkspace, openWorkspace } from "../session/workspace.js";
import { escapeForTerminal } from "../shared/terminal-text.js";
import { workspaceFlag } from "./hints.js";
import { latestSession } from "./latest-session.js";
import { stderrNotices } from "./notices.js";

/** `--last`, for every command that takes a session id. */
export const LAST_OPTION = { last: { type: "boolean" } } as const;

/**
 * The session a command names: the id as typed, else the one session whose id starts with it
 * (ids are long; typing enough to tell them apart is enough), or with `--last` the session whose
 * journal was written most recently. `usage` is the command's own form, for the error messages.
 */
export async function sessionFromArgs(
  dir: string | undefined,
  given: string | undefined,
  last: boolean | undefined,
  usage: string,
): Promise<{ workspace: OpenedWorkspace; sessionId: string }> {
  if (given !== undefined && last) throw new UsageError("name a session or pass --last, not both");
  if (given === undefined && !last) {
    throw new UsageError(
      `which session? ${usage} (or --last for the latest; list them with: harness sessions)`,
    );
  }
  if (given !== undefined) checkGivenId(given);
  const workspace = await openWorkspace(dir, { notify: stderrNotices });
  const sessionId = given === undefined ? await latest(workspace) : await byPrefix(workspace, given);
  return { workspace, sessionId };
}

/** The session `given` names in the workspace: that id, or the one id that starts with it. */
export async function byPrefix(workspace: OpenedWorkspace, given: string): Promise<string> {
  const found = await matchPrefix(workspace.store, given);
  if (found !== undefined) return found;
  throw new UsageError(
    `no session "${given}" in ${workspace.root} (list them with: harness sessions${workspaceFlag(workspace)})`,
  );
}

/** A session id as typed: a root id, or a sub-agent's `ROOT/LABEL...` (the root part may be a prefix). */
function checkGivenId(given: string): void {
  if (!isSessionId(given)) {
    throw new UsageError(
      `invalid session id "${escapeForTerminal(given)}": use letters, digits, '.', '_' or '-' ` +
        "(a sub-agent's session: that id, then /LABEL)",
    );
  }
}

/**
 * The session `given` names in `store`: the id itself, else the one id it starts; undefined when
 * none does. Several ids starting with it is a usage error (guessing one could continue, undo or
 * fork the wrong session). A sub-agent's id `ROOT/LABEL...` is taken as typed after its root
 * part, which may be the start of a root id like any other.
 */
async function matchPrefix(store: SessionLister, given: string): Promise<string | undefined> {
  if (await store.exists(given)) return given;
  const cut = given.indexOf("/");
  if (cut >= 0) {
    const root = await matchPrefix(store, given.slice(0, cut));
    if (root === undefined) return undefined;
    const child = `${root}${given.slice(cut)}`;
    return (await store.exists(child)) ? child : undefined;
  }
  const matches = (await store.list()).filter((id) => id.startsWith(given));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) return undefined;
  const shown = matches.slice(0, 5).join(", ");
  throw new UsageError(
    `"${given}" is the start of ${matches.length} sessions (${shown}${matches.length > 5 ? ", ..." : ""}); type more of the id`,
  );
}

interface SessionLister {
  exists(sessionId: string): Promise<boolean>;
  list(): Promise<readonly string[]>;
}

/**
 * `--session ID` of `run` and `chat`, where ID may also name a new session: an existing session
 * it names (exactly, or as the one id it starts) is continued; otherwise ID is the new session's id.
 */
export async function continuedOrNewSession(
  workspace: OpenedWorkspace,
  given: string,
): Promise<{ sessionId: string; existing: boolean }> {
  // A sub-agent's session is started by its parent's run, never named here as a new one.
  if (!isRootSessionId(given)) {
    throw new UsageError(
      `invalid session id "${escapeForTerminal(given)}": use letters, digits, '.', '_' or '-'`,
    );
  }
  const found = await matchPrefix(workspace.store, given);
  return found === undefined ? { sessionId: given, existing: false } : { sessionId: found, existing: true };
}

/** Most recently written journal: the session last worked on, whatever its id looks like. */
async function latest(workspace: OpenedWorkspace): Promise<string> {
  const id = await latestSession(workspace);
  if (id === undefined) throw new UsageError(`no sessions in ${workspace.root} yet`);
  return id;
}

/**
 * The session a command that can read PostgreSQL names: with `--database` the id or the one id it
 * starts among the database's sessions (`--last` needs a workspace's files), otherwise as
 * `sessionFromArgs` resolves it.
 */
export async function sessionIdFromArgs(
  flags: { workspace?: string | undefined; database?: string | undefined },
  given: string | undefined,
  last: boolean | undefined,
  usage: string,
): Promise<string> {
  if (flags.database === undefined)
    return (await sessionFromArgs(flags.workspace, given, last, usage)).sessionId;
  if (last)
    throw new UsageError("--last finds the latest session in a workspace; with --database name the session");
  if (given === undefined) {
    throw new UsageError(`which session? ${usage} (list them with: harness sessions --database URL)`);
  }
  checkGivenId(given);
  // A prefix is resolved in the database as in a workspace; the source is opened again by the command.
  const { openJournalSource } = await import("../session/journal-source.js");
  const source = await openJournalSource({ database: flags.database });
  try {
    return (await matchPrefix(source.store, given)) ?? given;
  } finally {
    await source.close();
  }
}
