import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import type { Pool } from "pg";
import { z } from "zod";
import { ConfigError } from "../../config/errors.js";
import { loadConfig } from "../../config/load.js";
import { serverIdentities } from "../../config/sections.js";
import { identityScope } from "../../journal/pg/quota.js";
import { serveHttp } from "../../server/http.js";
import { SessionHub } from "../../server/hub.js";
import { policyFor, RESERVED_IDENTITIES, TokenTable } from "../../server/identities.js";
import type { ServerInfo } from "../../server/rpc.js";
import { serveSessionFactory } from "../../server/session-factory.js";
import { serveStdio } from "../../server/stdio.js";
import { registerSecretPath } from "../../session/harness-secrets.js";
import type { JournalSource } from "../../session/journal-source.js";
import { pgQuotaPort } from "../../session/shared-quota.js";
import { UsageError } from "../../session/usage-error.js";
import { harnessVersion } from "../../session/version.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { parse } from "../args.js";

const OPTIONS = {
  stdio: { type: "boolean" },
  http: { type: "string" },
  tokens: { type: "string" },
  "allow-remote": { type: "boolean" },
  database: { type: "string" },
  "identity-quotas": { type: "boolean" },
  workspace: { type: "string", short: "w", multiple: true },
  json: { type: "boolean" },
  "session-threads": { type: "string" },
} as const;

const HELP = `Usage: harness serve --stdio [--workspace DIR]... [--database URL]
       harness serve --http HOST:PORT [--tokens FILE] [--allow-remote] [--workspace DIR]... [--database URL] [--json]
       (either with --database URL --identity-quotas)

Serve sessions to programs over JSON-RPC 2.0 (one JSON object per line): start sessions in
workspaces, run turns, stream every journaled event (each with its seq and hash, replayable),
answer approvals, fork, compact. Many sessions run at once; a client that disconnects never
stops one, and an approval with nobody connected waits (the session is awaiting_approval).

  --stdio              the protocol on stdin/stdout (the local user: sees every session);
                       logs go to stderr; stdin closing shuts the server down
  --http HOST:PORT     POST /rpc, GET /events?session=ID (Server-Sent Events, id SESSION:SEQ,
                       Last-Event-ID replay), GET / (the session viewer); 127.0.0.1:0 picks a
                       port. Prints the viewer's URL with its token: open it in a browser.
                       Every request needs Authorization: Bearer TOKEN (or ?token=TOKEN):
                       HARNESS_SERVER_TOKEN (identity "default") and/or
  --tokens FILE        a JSON file {"TOKEN": "IDENTITY", ...}; with neither, a random token
                       for "default" is made for this run (shown in the printed URL)
  --allow-remote       listen on a non-loopback address (the Host check is off then)
  --workspace, -w DIR  a workspace served: session/list shows every session recorded in it
                       (by run, chat, workers or this server), live; repeatable. Default: the
                       current directory, when it holds harness state (.harness)
  --database URL       session/list, session/read and session/verify also read sessions from
                       PostgreSQL (postgres://USER:PASSWORD@HOST:PORT/DB); sessions started
                       through the server still run in their workspaces
  --identity-quotas    every model request of a session reserves against the quota of the
                       identity that opened it (identity:NAME in the --database, set with
                       harness queue quota NAME --identity ...); a request that does not fit
                       is not sent and the turn stops with budget_exhausted; an identity
                       without a quota sends nothing
  --json               print {"url": ..., "viewer": ...} on stdout once listening (--http only)
  --session-threads N  run sessions on N worker threads (each session on the least loaded; a
                       thread starts when first needed), so many sessions use more than one core;
                       1 (the default; HARNESS_SESSION_THREADS sets another) runs them all on
                       the server's own thread
  -h, --help           show this help

Identities: the user config's "server": {"identities": {"NAME": {"tools": "readonly",
"deny": ["shell"], "ask": ["write_file"], "see_all": false}}} gives each identity its tool
catalog (tools outside it, and tools a bare deny rule names, are never offered to the model),
its rules, and whether it sees other identities' sessions (by default only its own);
"workspaces": ["/abs/dir", ...] the directories its sessions and scripts must lie in (without
it a --tokens identity may start nothing), and "host": true lets it pass options.accept and
options.base_url (run or fetched by this machine; the "default" identity has it unless set
false). A --tokens file may not name "local" or "default".

A recorded session is opened with session/start {"workspace", "session", "options"} (options
its journal does not keep, e.g. "script", given again). turn/start, turn/steer, turn/interrupt
and session/compact do not open one: on a session not open they answer -32002 with data.code
SESSION_NOT_OPEN and data.call, the session/start to make first.

SIGTERM, SIGINT or the shutdown method interrupt every running turn at its next safe point
(turn.interrupted is journaled), then the server exits 0.`;

const tokenFileSchema = z.record(
  z.string().min(16, "a token is at least 16 characters"),
  z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .refine((name) => !RESERVED_IDENTITIES.includes(name), {
      message: `"local" and "default" are reserved (HARNESS_SERVER_TOKEN is "default")`,
    }),
);

export const serveCommand = {
  help: HELP,
  options: OPTIONS,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, OPTIONS);
    if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
    if (!values.stdio && values.http === undefined)
      throw new UsageError("choose a transport: harness serve --stdio, or harness serve --http 127.0.0.1:0");
    if (values.json && values.stdio)
      throw new UsageError("--json prints to stdout, which --stdio uses for the protocol: drop --json");
    const listen = values.http === undefined ? undefined : hostPort(values.http);
    const tokens = listen ? await tokenTable(values.tokens) : undefined;
    const config = await loadConfig({
      workspaceRoot: process.cwd(),
      env: process.env,
      homedir: homedir(),
    }).catch((error: unknown) => {
      if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
      throw error;
    });
    let identities: ReturnType<typeof serverIdentities>;
    try {
      identities = serverIdentities(config);
    } catch (error) {
      if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
      throw error;
    }
    const log = (line: string) => process.stderr.write(`harness serve: ${escapeForTerminal(line)}\n`);
    const database: JournalSource | undefined =
      values.database === undefined
        ? undefined
        : // pg loads only when a database is named.
          await (await import("../../session/journal-source.js")).openJournalSource({
            database: values.database,
          });
    if (values["identity-quotas"] === true && database === undefined)
      throw new UsageError("--identity-quotas needs --database URL (where the quotas are)");
    const quotaPool =
      values["identity-quotas"] === true && database !== undefined ? poolOf(database) : undefined;
    const quotas =
      quotaPool !== undefined
        ? (identity: string) =>
            pgQuotaPort(quotaPool, identityScope(identity), {
              hint: `harness queue quota ${identity} --identity ...`,
              log,
            })
        : undefined;
    const local = serveSessionFactory({
      ...(values.workspace !== undefined ? { workspaces: values.workspace } : {}),
      ...(database ? { database } : {}),
      ...(quotas !== undefined ? { quotas } : {}),
      log,
    });
    const threads = sessionThreads(values["session-threads"] ?? process.env.HARNESS_SESSION_THREADS);
    const threaded =
      threads > 1
        ? (await import("../../server/threaded-factory.js")).threadedSessionFactory({
            threads,
            local,
            ...(quotas !== undefined ? { quotas } : {}),
            log,
          })
        : undefined;
    const hub = new SessionHub({ factory: threaded ?? local, log });

    let finished!: () => void;
    const done = new Promise<void>((resolve) => {
      finished = resolve;
    });
    let stopping: Promise<void> | undefined;
    let http: Awaited<ReturnType<typeof serveHttp>> | undefined;
    const stop = (why: string) => {
      stopping ??= (async () => {
        log(`${why}: interrupting running turns, then exiting`);
        await hub.shutdown();
        await threaded?.close();
        await http?.close();
        await database?.close();
        finished();
      })();
      return stopping;
    };
    const info: ServerInfo = {
      version: harnessVersion(),
      http: listen !== undefined,
      shutdown: () => void stop("shutdown requested"),
    };
    const onSignal = (signal: NodeJS.Signals) => void stop(signal);
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);

    http = listen
      ? await serveHttp(hub, {
          host: listen.host,
          port: listen.port,
          allowRemote: values["allow-remote"] === true,
          tokens: tokens!.table,
          policyOf: (name) => policyFor(name, identities[name]),
          info,
          log,
        }).catch((error: unknown) => {
          throw new UsageError(
            `cannot listen on ${values.http}: ${error instanceof Error ? error.message : String(error)}`,
          );
        })
      : undefined;
    if (http) {
      const viewer = viewerUrl(http.url, tokens?.pageToken);
      if (values.json) process.stdout.write(`${JSON.stringify({ url: http.url, viewer })}\n`);
      log(`listening on ${http.url}`);
      // One line the user can open as it is: the page reads its token from the URL.
      log(
        tokens?.pageToken === undefined
          ? `viewer: ${viewer} (add ?token=YOUR_TOKEN from ${values.tokens})`
          : `viewer: ${viewer}`,
      );
    }
    if (values.stdio)
      void serveStdio(hub, info, process.stdin, process.stdout).then(() => stop("stdin closed"));
    await done;
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    return 0;
  },
};

/** --session-threads (or HARNESS_SESSION_THREADS): a count from 1 to 64; absent: 1. */
function sessionThreads(value: string | undefined): number {
  if (value === undefined || value === "") return 1;
  const count = /^\d{1,2}$/.test(value) ? Number(value) : Number.NaN;
  if (!(count >= 1 && count <= 64))
    throw new UsageError(`--session-threads takes a number of threads from 1 to 64, not "${value}"`);
  return count;
}

function hostPort(value: string): { host: string; port: number } {
  const match = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match || port > 65535)
    throw new UsageError(`--http takes HOST:PORT, e.g. 127.0.0.1:8787 (port 0 picks one), not "${value}"`);
  const host = match[1]!.replace(/^\[|\]$/g, "");
  return { host, port };
}

/** The viewer's address: the page at `/` with the token it sends (none known: the bare page). */
function viewerUrl(base: string, token: string | undefined): string {
  return token === undefined ? `${base}/` : `${base}/?token=${encodeURIComponent(token)}`;
}

/**
 * The server's tokens, and the one the printed viewer URL carries (the "default" identity's:
 * HARNESS_SERVER_TOKEN, or one made for this run when neither it nor --tokens is given).
 */
async function tokenTable(
  file: string | undefined,
): Promise<{ table: TokenTable; pageToken: string | undefined }> {
  const tokens: Record<string, string> = {};
  let single = process.env.HARNESS_SERVER_TOKEN;
  // Nothing configured: a token for this run only, 256 random bits, shown once in the URL.
  if ((single === undefined || single === "") && file === undefined)
    single = randomBytes(32).toString("base64url");
  if (single !== undefined && single !== "") tokens[single] = "default";
  if (file !== undefined) {
    // Hidden from every sandboxed process this server starts, wherever the file lies.
    registerSecretPath(file);
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readFile(file, "utf8"));
    } catch (error) {
      throw new UsageError(
        `--tokens ${file}: cannot read it as JSON (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    const checked = tokenFileSchema.safeParse(parsed);
    if (!checked.success)
      throw new UsageError(
        `--tokens ${file}: ${z.prettifyError(checked.error)} (expected {"TOKEN": "IDENTITY", ...})`,
      );
    Object.assign(tokens, checked.data);
  }
  const table = new TokenTable(tokens);
  if (table.size === 0)
    throw new UsageError(
      'the HTTP server needs a token: set HARNESS_SERVER_TOKEN (identity "default") or pass --tokens FILE holding {"TOKEN": "IDENTITY"}',
    );
  return { table, pageToken: single !== undefined && single !== "" ? single : undefined };
}

/** The PostgreSQL pool behind --database (its journal store's). */
function poolOf(database: JournalSource): Pool {
  // PgJournalStore's pool, read without importing the store (pg loads only when a database is named).
  const pool = (database.store as { pool?: Pool }).pool;
  if (pool === undefined) throw new UsageError("--identity-quotas needs --database URL to be PostgreSQL");
  return pool;
}
