import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { FleetDatabase, FleetError, type TaskRow } from "../../fleet/queue.js";
import {
  absoluteSource,
  type FleetTask,
  fleetTaskSchema,
  parseTasksFile,
  TaskError,
  type TaskOptions,
  taskOptionsSchema,
  type WorkspaceSource,
} from "../../fleet/task.js";
import { configureQuota, ensureQuotaSchema, identityScope, queueScope } from "../../journal/pg/quota.js";
import { validateRootSessionId } from "../../session/session-id.js";
import { UsageError } from "../../session/usage-error.js";
import { newSessionId } from "../../session/workspace.js";
import { escapeForTerminal, jsonForTerminal } from "../../shared/terminal-text.js";
import { parse, positiveInt } from "../args.js";
import { givenFlags, SESSION_OPTIONS } from "./run.js";
import { quotaName, requireDatabase } from "./worker.js";

const HELP = `Usage: harness queue submit --database URL [--session ID] [run options] GOAL
       harness queue submit --database URL --tasks FILE
       harness queue status --database URL [--json]
       harness queue quota NAME --database URL --period SECONDS [--usd X] [--tokens N] [--requests N] [--identity]

Queue sessions for workers (harness worker) sharing the PostgreSQL database at URL, and see
where they stand. Each session is one job; a worker runs it as harness run would, with its
journal in the database (harness sessions/inspect/journal verify --database URL read it).
Each task is signed with your journal key: workers must hold the same key ($HARNESS_KEY_FILE),
and they run no task whose row was changed in the database since.

submit:
  GOAL                    the task; with the run options of harness run (--script, --provider,
                          --model, --write, --shell, --accept, --allow, --max-tool-calls, ...)
  --workspace DIR         a workspace every worker can reach (shared storage; default: cwd)
  --copy-from DIR         instead: copy DIR into a fresh workspace on the worker that starts it
  --git URL --revision REV
                          instead: clone URL and check out REV on the worker that starts it
  --session ID            the session id (default: a new one); an existing one is refused
  --tasks FILE            many at once: one JSON object per line, {"goal", "workspace",
                          "session"?, "script"?, "provider"?, "model"?, "write"?, "shell"?,
                          "accept": [...]?}; "workspace" is a shared path, or {"copy": DIR}, or
                          {"git": URL, "revision": REV}; relative paths are from FILE's directory
  --json                  print the queued sessions as JSON

A copied or cloned workspace exists only on its worker's disk: if that worker dies, the session
stops with review_required; it is never started again from scratch.

status:
  --json                  one JSON object: {"tasks": [...], "counts": {...}}

quota:
  NAME                    the quota workers started with --quota NAME share (scope queue:NAME)
  --period SECONDS        the period it counts over; used amounts start over each period
  --usd X                 dollars per period, at the model profile's prices (a model without
                          prices counts $0)
  --tokens N              input plus output tokens per period
  --requests N            model requests per period
                          (a limit left out is no limit; setting it again keeps what this
                          period used)
  --identity              instead: the quota of the server identity NAME (identity:NAME), for
                          harness serve --database URL --identity-quotas

Exit codes: 0 done, 64 usage error (a bad task, an existing session, an unreachable database).`;

const SUBMIT_OPTIONS = {
  ...SESSION_OPTIONS,
  database: { type: "string" },
  tasks: { type: "string" },
  "copy-from": { type: "string" },
  git: { type: "string" },
  revision: { type: "string" },
} as const;

export const queueCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const [sub, ...rest] = args;
    if (sub === "submit") return submit(rest);
    if (sub === "status") return status(rest);
    if (sub === "quota") return quota(rest);
    throw new UsageError(
      sub === undefined ? "which? harness queue submit | status | quota" : `unknown queue command "${sub}"`,
    );
  },
};

async function submit(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, SUBMIT_OPTIONS);
  const database = requireDatabase(values.database);
  const tasks =
    values.tasks !== undefined ? await tasksFromFile(values) : [taskFromFlags(values, positionals)];
  await withDatabase(database, (db) => db.submit(tasks));
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ queued: tasks.map((task) => task.session) })}\n`);
  } else {
    for (const task of tasks) process.stdout.write(`queued ${task.session}\n`);
  }
  return 0;
}

type SubmitValues = ReturnType<typeof parse<typeof SUBMIT_OPTIONS>>["values"];

async function tasksFromFile(values: SubmitValues): Promise<FleetTask[]> {
  const path = resolve(values.tasks ?? "");
  const single = ["session", "workspace", "copy-from", "git", "script"] as const;
  for (const flag of single) {
    if (values[flag] !== undefined)
      throw new UsageError(`--tasks and --${flag} are exclusive (put it in the file)`);
  }
  const text = await readFile(path, "utf8").catch((error: unknown) => {
    throw new UsageError(`cannot read the tasks file ${path}: ${(error as Error).message}`);
  });
  try {
    return parseTasksFile(text, dirname(path), () => newSessionId());
  } catch (error) {
    if (error instanceof TaskError) throw new UsageError(`tasks file ${path}: ${error.message}`);
    throw error;
  }
}

function taskFromFlags(values: SubmitValues, positionals: string[]): FleetTask {
  const goal = positionals.join(" ").trim();
  if (goal === "")
    throw new UsageError("a goal is required: harness queue submit [options] GOAL (or --tasks FILE)");
  givenFlags(values); // the same checks of --write, --shell, --sandbox, --provider as harness run
  const session = values.session ?? newSessionId();
  validateRootSessionId(session);
  const sources = [values["copy-from"], values.git].filter((value) => value !== undefined);
  if (sources.length > 1 || (sources.length === 1 && values.workspace !== undefined))
    throw new UsageError("choose one of --workspace, --copy-from and --git");
  if ((values.git === undefined) !== (values.revision === undefined))
    throw new UsageError("--git URL needs --revision REV (and --revision needs --git)");
  const source: WorkspaceSource =
    values["copy-from"] !== undefined
      ? { copy: values["copy-from"] }
      : values.git !== undefined && values.revision !== undefined
        ? { git: values.git, revision: values.revision }
        : { shared: values.workspace ?? process.cwd() };
  const options: TaskOptions = {};
  for (const key of Object.keys(taskOptionsSchema.shape) as (keyof TaskOptions)[]) {
    const value = values[key];
    if (value !== undefined) Object.assign(options, { [key]: value });
  }
  if (options.script !== undefined) options.script = resolve(options.script);
  const parsed = fleetTaskSchema.safeParse({
    session,
    goal,
    workspace: absoluteSource(source, process.cwd()),
    options,
  });
  if (!parsed.success) throw new UsageError(z.prettifyError(parsed.error));
  return parsed.data;
}

async function status(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { database: { type: "string" }, json: { type: "boolean" } });
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const database = requireDatabase(values.database);
  const rows = await withDatabase(database, (db) => db.status());
  const counts = countStates(rows);
  if (values.json) {
    process.stdout.write(`${jsonForTerminal({ tasks: rows, counts })}\n`);
    return 0;
  }
  process.stdout.write(
    `${rows.length} sessions: ${counts.queued} queued, ${counts.running} running, ${counts.done} done\n`,
  );
  for (const row of rows) {
    const where = row.state === "running" && row.worker ? ` on ${escapeForTerminal(row.worker)}` : "";
    const outcome = row.status ? ` ${escapeForTerminal(row.status)}` : "";
    const again = row.requeues > 0 ? ` (queued again ${row.requeues}x)` : "";
    process.stdout.write(
      `${row.session}  ${row.state}${outcome}${where}${again}  ${escapeForTerminal(row.goal.slice(0, 60))}\n`,
    );
  }
  return 0;
}

async function quota(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    database: { type: "string" },
    period: { type: "string" },
    usd: { type: "string" },
    tokens: { type: "string" },
    requests: { type: "string" },
    identity: { type: "boolean" },
  });
  const [name, extra] = positionals;
  if (name === undefined) throw new UsageError("which quota? harness queue quota NAME --period SECONDS ...");
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
  const database = requireDatabase(values.database);
  const periodSeconds = positiveInt(values.period, "--period");
  if (periodSeconds === undefined) throw new UsageError("--period SECONDS is required");
  const tokens = wholeOrZero(values.tokens, "--tokens");
  const requests = wholeOrZero(values.requests, "--requests");
  let usd: number | undefined;
  if (values.usd !== undefined) {
    usd = Number(values.usd);
    if (!/^[0-9]+(\.[0-9]+)?$/.test(values.usd) || !Number.isFinite(usd))
      throw new UsageError(`--usd must be a non-negative number, got ${JSON.stringify(values.usd)}`);
  }
  const scope = (values.identity === true ? identityScope : queueScope)(quotaName(name));
  await withDatabase(database, async (db) => {
    await ensureQuotaSchema(db.pool);
    await configureQuota(db.pool, scope, {
      periodMs: periodSeconds * 1000,
      ...(usd !== undefined ? { usd } : {}),
      ...(tokens !== undefined ? { tokens } : {}),
      ...(requests !== undefined ? { requests } : {}),
    });
  });
  process.stdout.write(`quota ${scope} set\n`);
  return 0;
}

function wholeOrZero(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,15}$/.test(value))
    throw new UsageError(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  return Number(value);
}

export function countStates(rows: readonly TaskRow[]): Record<"queued" | "running" | "done", number> {
  const counts = { queued: 0, running: 0, done: 0 };
  for (const row of rows) counts[row.state] += 1;
  return counts;
}

export async function withDatabase<T>(url: string, work: (db: FleetDatabase) => Promise<T>): Promise<T> {
  let db: FleetDatabase;
  try {
    db = await FleetDatabase.open(url, { maxConnections: 2 });
  } catch (error) {
    if (error instanceof FleetError) throw new UsageError(error.message);
    throw error;
  }
  try {
    return await work(db);
  } catch (error) {
    if (error instanceof FleetError) throw new UsageError(error.message);
    throw error;
  } finally {
    await db.close();
  }
}
