import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { launchSession } from "../../fleet/launcher.js";
import { FleetError } from "../../fleet/queue.js";
import type { FleetTask } from "../../fleet/task.js";
import { FleetWorker } from "../../fleet/worker.js";
import { UsageError } from "../../session/usage-error.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { parse, positiveInt } from "../args.js";

const HELP = `Usage: harness worker --database URL [--concurrency N] [--lease-ms MS] [--work-dir DIR] [--quota NAME]

Run queued sessions (harness queue submit) from the PostgreSQL database at URL, up to N at once.
Each session is owned through a lease in the database, renewed while it runs: a worker that
stops renewing (killed, paused, cut off) loses it when it expires, every worker's reaper then
queues the session again, and the next worker continues it from its journal (calls that started
without a result become unknown, for review). A worker that lost its lease can append nothing
more, so it never starts a call; it kills its process trees and drops the session.

Sessions on a shared workspace path move between workers. A workspace copied or cloned for a
session exists only on the disk of the worker that made it: if that worker dies, the session
stops with review_required (reason workspace_lost); it is never started again from scratch.

A task runs only if it verifies under this worker's journal key (the submitter's key): a task
row changed in the database, or queued with another key, is logged and never run.

Options:
  --database URL      PostgreSQL connection URL (journal, leases and queue live there)
  --concurrency N     sessions run at once (default 1)
  --lease-ms MS       lease time; renewed every third of it (default 30000)
  --work-dir DIR      where copied and cloned workspaces are made
                      (default: $XDG_STATE_HOME/harness/fleet)
  --quota NAME        every model request of this worker's sessions reserves against the queue
                      quota NAME (harness queue quota NAME ...), shared by every worker given it;
                      a request that does not fit is not sent and its session stops with
                      budget_exhausted (none: no quota)
  -h, --help          show this help

SIGINT/SIGTERM: stop taking jobs; running sessions stop at their next safe point and are queued
again for another worker.`;

/** A queue quota's name: short, printable, no separators a scope could be confused by. */
export function quotaName(value: string): string {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(value))
    throw new UsageError(
      `a quota name is 1 to 64 letters, digits, ".", "_" or "-", got ${JSON.stringify(value)}`,
    );
  return value;
}

export const workerCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      database: { type: "string" },
      concurrency: { type: "string" },
      "lease-ms": { type: "string" },
      "work-dir": { type: "string" },
      quota: { type: "string" },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const database = requireDatabase(values.database);
    const concurrency = positiveInt(values.concurrency, "--concurrency") ?? 1;
    const leaseMs = positiveInt(values["lease-ms"], "--lease-ms") ?? 30_000;
    if (leaseMs < 300) throw new UsageError("--lease-ms must be at least 300");
    const workDir = values["work-dir"] ?? defaultWorkDir(process.env);
    const quota = values.quota === undefined ? undefined : quotaName(values.quota);
    const log = (line: string) => process.stderr.write(`harness worker: ${escapeForTerminal(line)}\n`);
    const worker = await FleetWorker.start({
      database,
      concurrency,
      leaseMs,
      workDir,
      launch: launchSession(log, quota === undefined ? {} : { quota }),
      log,
    }).catch((error: unknown) => {
      if (error instanceof FleetError) throw new UsageError(error.message);
      throw error;
    });
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    log("stopping: running sessions stop at their next safe point and are queued again");
    await worker.stop();
    return 0;
  },
};

function defaultWorkDir(env: NodeJS.ProcessEnv): string {
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : undefined;
  return join(state ?? join(homedir(), ".local", "state"), "harness", "fleet");
}

export function requireDatabase(value: string | undefined): string {
  if (value === undefined || value === "")
    throw new UsageError("--database URL is required (a PostgreSQL connection URL)");
  if (!/^postgres(ql)?:\/\//.test(value))
    throw new UsageError(`--database must be a postgres:// or postgresql:// URL, not "${value}"`);
  return value;
}

export type { FleetTask };
