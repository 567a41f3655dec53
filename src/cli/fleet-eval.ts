import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { parseTasksFile, TaskError } from "../fleet/task.js";
import { UsageError } from "../session/usage-error.js";
import { newSessionId } from "../session/workspace.js";
import { escapeForTerminal, jsonForTerminal } from "../shared/terminal-text.js";
import { countStates, withDatabase } from "./commands/queue.js";
import { EXIT } from "./exit-codes.js";

/**
 * `harness eval TASKS.jsonl --database URL`: a suite of tasks (the `queue submit --tasks` format)
 * run on the pool of workers. Each task passes when its session ends `verified` (its --accept
 * checks passed on the host after the model finished); the report counts every task.
 */
export async function runSuiteOnPool(
  file: string,
  database: string,
  options: { json: boolean; signal: AbortSignal; pollMs?: number },
): Promise<number> {
  const path = resolve(file);
  const text = await readFile(path, "utf8").catch((error: unknown) => {
    throw new UsageError(
      `--database runs a suite given as a tasks file (one JSON task per line); cannot read ${path}: ${(error as Error).message}`,
    );
  });
  let tasks: ReturnType<typeof parseTasksFile>;
  try {
    tasks = parseTasksFile(text, dirname(path), () => newSessionId());
  } catch (error) {
    if (error instanceof TaskError) throw new UsageError(`suite ${path}: ${error.message}`);
    throw error;
  }
  const ids = new Set(tasks.map((task) => task.session));
  return withDatabase(database, async (db) => {
    await db.submit(tasks);
    process.stderr.write(
      `queued ${tasks.length} tasks; waiting for the workers (harness worker --database URL)\n`,
    );
    for (;;) {
      const rows = (await db.status()).filter((row) => ids.has(row.session));
      const counts = countStates(rows);
      if (counts.done === rows.length || options.signal.aborted) {
        const passed = rows.filter((row) => row.status === "verified").length;
        if (options.json) {
          process.stdout.write(
            `${jsonForTerminal({ tasks: rows, totals: { tasks: rows.length, done: counts.done, passed } }, 2)}\n`,
          );
        } else {
          for (const row of rows)
            process.stdout.write(
              `${row.status === "verified" ? "pass" : "FAIL"} ${row.session} (${escapeForTerminal(row.status ?? row.state)})\n`,
            );
          process.stdout.write(`passed ${passed} of ${rows.length} tasks (${counts.done} finished)\n`);
        }
        if (options.signal.aborted) return EXIT.cancelled;
        return passed === rows.length ? EXIT.ok : EXIT.stopped;
      }
      await new Promise((done) => setTimeout(done, options.pollMs ?? 500));
    }
  });
}
