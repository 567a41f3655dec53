import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { formatReport } from "../../eval/report.js";
import { runSuite, SuiteError } from "../../eval/runner.js";
import { builtinSuite, SUITE_NAMES } from "../../eval/suites/index.js";
import { demoRun } from "../../examples/demo/script.js";
import { UsageError } from "../../session/usage-error.js";
import { harnessVersion } from "../../session/version.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { oneOf, parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { fitLine, fitText, outputWidth } from "../fit.js";

const DECISIONS = ["workflow", "http-json"] as const;

const HELP = `Usage: harness eval SUITE [--json] [--out FILE] [--decision workflow|http-json] [--filter ID]
       harness eval TASKS.jsonl --database URL [--json]

Run a built-in evaluation suite. Every task runs through the real engine in a fresh temporary
workspace (its own journal and, for reservations, a fresh SQLite database) and is judged by
host-side checks of its effects, never by the decision source's own words.

Suites:
  reservations  17 equipment-reservation tasks (reserve, info, insufficient, not found,
                ambiguous, denied, untrusted policy, injected document, bad quantities, exact
                budget, budget exhausted, crash recovery)
  faults        the fault table over the file tools (truncated stream, writes disabled,
                stale version, started without result, claimed completion, changed after finish)

Options:
  --json                 print the JSON report on stdout instead of the table
  --out FILE             also write the JSON report to FILE
  --decision MODE        reservations only: "workflow" (default, in process) or "http-json"
                         (the same policies served by a local HTTP policy server on 127.0.0.1)
  --filter ID            run only the task with this id
  --database URL         run a suite given as a tasks file (the harness queue submit --tasks
                         format) on the pool of workers sharing this PostgreSQL database; a
                         task passes when its session ends verified (its --accept checks pass)

Exit status: 0 when every task passed, 2 otherwise.`;

export const evalCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      json: { type: "boolean" },
      out: { type: "string" },
      decision: { type: "string" },
      filter: { type: "string" },
      database: { type: "string" },
    });
    const [name, ...extra] = positionals;
    if (name === undefined) throw new UsageError(`name a suite: ${SUITE_NAMES.join(", ")}`);
    if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
    if (values.database !== undefined) return poolSuite(name, values);
    const decision = oneOf(values.decision, "--decision", DECISIONS);
    if (decision !== undefined && name !== "reservations")
      throw new UsageError("--decision applies to the reservations suite only");
    const version = harnessVersion();
    const suite = builtinSuite(name, {
      ...(decision ? { decision } : {}),
      harnessVersion: version,
      faultBaseline: demoRun,
    });
    if (!suite) throw new UsageError(`unknown suite "${name}" (suites: ${SUITE_NAMES.join(", ")})`);

    const controller = new AbortController();
    const onSignal = () => controller.abort();
    process.once("SIGINT", onSignal);
    let report: Awaited<ReturnType<typeof runSuite>>;
    try {
      report = await runSuite(suite, {
        ...(values.filter !== undefined ? { filter: values.filter } : {}),
        harnessVersion: version,
        signal: controller.signal,
        ...(values.json
          ? {}
          : {
              onTask: (task) =>
                process.stderr.write(
                  `${fitLine(
                    `${task.passed ? "pass" : "FAIL"} ${escapeForTerminal(task.id)} (${escapeForTerminal(task.actual)})`,
                    outputWidth(process.stderr),
                  )}\n`,
                ),
            }),
      });
    } catch (error) {
      if (error instanceof SuiteError) throw new UsageError(error.message);
      throw error;
    } finally {
      process.removeListener("SIGINT", onSignal);
    }
    const json = `${JSON.stringify(report, null, 2)}\n`;
    if (values.out !== undefined) await writeFile(resolve(values.out), json);
    process.stdout.write(
      values.json ? json : `${fitText(formatReport(report), outputWidth(process.stdout))}\n`,
    );
    if (controller.signal.aborted) return EXIT.cancelled;
    return report.totals.passed === report.totals.tasks_run ? EXIT.ok : EXIT.stopped;
  },
};

/** The built-in suites check local databases and files in process; on the pool a suite is a tasks file. */
async function poolSuite(name: string, values: { database?: string; json?: boolean }): Promise<number> {
  if ((SUITE_NAMES as readonly string[]).includes(name))
    throw new UsageError(
      `the built-in suite "${name}" runs in this process (its checks read the task's local files); with --database, name a tasks file`,
    );
  const { runSuiteOnPool } = await import("../fleet-eval.js");
  const { requireDatabase } = await import("./worker.js");
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once("SIGINT", onSignal);
  try {
    return await runSuiteOnPool(name, requireDatabase(values.database), {
      json: values.json === true,
      signal: controller.signal,
    });
  } finally {
    process.removeListener("SIGINT", onSignal);
  }
}
