import { readFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import type { JournalKey } from "../journal/key.js";
import { type UnlockResult, unlockSession } from "../journal/lock.js";
import { ensurePgSchema } from "../journal/pg/schema.js";
import { database, PgJournalStore } from "../journal/pg/store.js";
import { verifyPgJournal, verifyPgJournalPrefix } from "../journal/pg/verify.js";
import { unlockPgSession } from "../journal/pg/writer-claim.js";
import type { JournalStore } from "../journal/store.js";
import { type VerifyResult, verifyJournal, verifyJournalBytes } from "../journal/verify.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import { IGNORE_NOTICES, type Notify } from "./notice.js";
import { UsageError } from "./usage-error.js";
import { openWorkspace } from "./workspace.js";

/**
 * Where the commands that show sessions (`sessions`, `inspect`, `journal verify`, `report`) read them: a
 * workspace's `.harness` directory, or a PostgreSQL database (`--database URL`) that workers share.
 */
export interface JournalSource {
  store: JournalStore & { readonly key: JournalKey };
  /** For messages: the workspace path, or the database URL without its password. */
  where: string;
  verify(sessionId: string): Promise<VerifyResult>;
  /** `verify`, with the records of the longest verified prefix (all of them when it verifies): what a report shows. */
  verifiedPrefix(sessionId: string): Promise<VerifiedPrefix>;
  /** Clear the session's writer lock when its owner is provably gone, or (`force`) cannot be checked from here. */
  unlock(sessionId: string, options: { force: boolean }): Promise<UnlockResult>;
  /** A session's artifact directory on this machine; undefined when sessions are in a database and no workspace was named. */
  artifactsDir(sessionId: string): string | undefined;
  close(): Promise<void>;
}

export interface VerifiedPrefix {
  result: VerifyResult;
  records: AnyRecord[];
}

export interface JournalSourceFlags {
  workspace?: string | undefined;
  database?: string | undefined;
}

/** The `--database URL` line every such command's --help shows. */
export const DATABASE_HELP =
  "--database URL reads sessions from PostgreSQL (postgres://USER:PASSWORD@HOST:PORT/DB) instead of a workspace.";

/**
 * `withArtifacts`: the command checks artifacts, which stay on disk when sessions are in a database,
 * so `--workspace` may name where they are; other commands refuse the two flags together.
 */
export async function openJournalSource(
  flags: JournalSourceFlags,
  options: { withArtifacts?: boolean; notify?: Notify } = {},
): Promise<JournalSource> {
  const notify = options.notify ?? IGNORE_NOTICES;
  if (flags.database !== undefined && flags.workspace !== undefined && options.withArtifacts !== true) {
    throw new UsageError("--workspace and --database name two places to read sessions from; give one");
  }
  if (flags.database === undefined) {
    const workspace = await openWorkspace(flags.workspace, { notify });
    return {
      store: workspace.store,
      where: workspace.root,
      verify: (sessionId) => verifyJournal(join(workspace.sessionDir(sessionId), "events.jsonl")),
      verifiedPrefix: (sessionId) =>
        verifiedFilePrefix(join(workspace.sessionDir(sessionId), "events.jsonl"), sessionId),
      unlock: async (sessionId, options) => unlockSession(workspace.harnessDir, sessionId, options),
      artifactsDir: (sessionId) => join(workspace.sessionDir(sessionId), "artifacts"),
      close: async () => {},
    };
  }
  const url = databaseUrl(flags.database);
  const workspace =
    flags.workspace === undefined ? undefined : await openWorkspace(flags.workspace, { notify });
  // allowExitOnIdle: a command ends when its work does, without having to close the pool.
  const pool = new pg.Pool({
    connectionString: url.href,
    max: 2,
    connectionTimeoutMillis: 10_000,
    allowExitOnIdle: true,
  });
  // An idle client's error (the server went away) must not crash the process; the next query reports it.
  pool.on("error", () => {});
  const where = `database ${shownUrl(url)}`;
  try {
    await database(undefined, `connect to ${shownUrl(url)}`, () => ensurePgSchema(pool));
  } catch (error) {
    await pool.end();
    throw error;
  }
  return {
    store: new PgJournalStore(pool),
    where,
    verify: (sessionId) => verifyPgJournal(pool, sessionId),
    verifiedPrefix: (sessionId) => verifyPgJournalPrefix(pool, sessionId),
    unlock: (sessionId, options) =>
      database(undefined, `clear the writer lock of session ${sessionId}`, () =>
        unlockPgSession(pool, sessionId, options),
      ),
    artifactsDir: (sessionId) => (workspace ? join(workspace.sessionDir(sessionId), "artifacts") : undefined),
    close: () => pool.end(),
  };
}

/** Open the source and check that the session is in it (otherwise a usage error saying where to look). */
export async function openSessionSource(
  flags: JournalSourceFlags,
  sessionId: string,
  options: { withArtifacts?: boolean; notify?: Notify } = {},
): Promise<JournalSource> {
  const source = await openJournalSource(flags, options);
  if (!(await source.store.exists(sessionId))) {
    await source.close();
    const list = flags.database === undefined ? "harness sessions" : "harness sessions --database URL";
    throw new UsageError(`no session "${sessionId}" in ${source.where} (list them with: ${list})`);
  }
  return source;
}

/** A journal file verified from its bytes; when it does not verify, the prefix that does, verified again on its own. */
async function verifiedFilePrefix(path: string, sessionId: string): Promise<VerifiedPrefix> {
  const bytes = await readFile(path);
  const result = verifyJournalBytes(bytes, sessionId);
  if (result.ok) return { result, records: result.records };
  const prefix = verifyJournalBytes(bytes.subarray(0, result.validBytes), sessionId);
  return { result, records: prefix.ok ? prefix.records : [] };
}

/** `--database` is external input: a postgres:// or postgresql:// URL, or a usage error. */
function databaseUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError("--database must be a URL like postgres://USER:PASSWORD@HOST:5432/DB");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new UsageError(`--database must be a postgres:// URL, got a ${url.protocol} one`);
  }
  return url;
}

/** The URL for messages: never the password. */
function shownUrl(url: URL): string {
  const shown = new URL(url.href);
  if (shown.password) shown.password = "***";
  return shown.href;
}
