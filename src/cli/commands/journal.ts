import { join } from "node:path";
import { describeOwner, unlockSession } from "../../journal/lock.js";
import { repairJournal } from "../../journal/repair.js";
import { verifyJournal } from "../../journal/verify.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { UsageError } from "../usage-error.js";
import { openWorkspace } from "../workspace.js";

const JOURNAL_HELP = `Usage: harness journal verify SESSION [--workspace DIR] [--json]
       harness journal repair SESSION [--workspace DIR] [--json]

verify  check every record: sequence, hash chain, record hashes, event shapes.
        Exit 0 when intact, 2 when damaged (the message says what and where).
repair  keep a byte-identical backup (events.jsonl.bak-<time>), then cut the journal back to
        its last valid record. Refused while a live writer holds the session.`;

const UNLOCK_HELP = `Usage: harness unlock SESSION [--workspace DIR] [--force]

Clear a session's writer lock whose owner process is gone (after a crash or SIGKILL).
A lock held by a live process is never removed; --force removes a lock whose owner cannot be
checked from here (e.g. another host) once you have made sure nothing is using the session.`;

export const journalCommand = {
  summary: "verify or repair a session journal",
  help: JOURNAL_HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      json: { type: "boolean" },
    });
    const [action, sessionId] = positionals;
    if (action !== "verify" && action !== "repair")
      throw new UsageError("expected: harness journal verify|repair SESSION");
    if (!sessionId) throw new UsageError(`which session? harness journal ${action} SESSION`);
    const workspace = await openWorkspace(values.workspace);
    if (!(await workspace.backend.exists(sessionId)))
      throw new UsageError(`no session "${sessionId}" in ${workspace.root}`);
    if (action === "verify") {
      const result = await verifyJournal(join(workspace.sessionDir(sessionId), "events.jsonl"));
      if (values.json) {
        const body = result.ok ? { ok: true, records: result.records.length } : { ...result };
        process.stdout.write(`${JSON.stringify({ session: sessionId, ...body })}\n`);
      } else if (result.ok) {
        process.stdout.write(`journal ${sessionId}: intact (${result.records.length} records)\n`);
      } else {
        process.stdout.write(
          `journal ${sessionId}: ${result.code}: ${result.message}\n` +
            `the first ${result.validRecords} records are valid; repair with: harness journal repair ${sessionId}\n`,
        );
      }
      return result.ok ? EXIT.ok : EXIT.stopped;
    }
    const repaired = await repairJournal(workspace.harnessDir, sessionId);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ session: sessionId, ...repaired })}\n`);
    } else if (repaired.backup === null) {
      process.stdout.write(
        `journal ${sessionId}: intact, nothing to repair (${repaired.keptRecords} records)\n`,
      );
    } else {
      process.stdout.write(
        `journal ${sessionId}: kept ${repaired.keptRecords} records, dropped ${repaired.droppedLines} line(s) ` +
          `(${repaired.droppedBytes} bytes)\nbackup: ${repaired.backup}\n`,
      );
    }
    return EXIT.ok;
  },
};

export const unlockCommand = {
  summary: "clear a writer lock whose owner is gone",
  help: UNLOCK_HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      force: { type: "boolean" },
    });
    const [sessionId] = positionals;
    if (!sessionId) throw new UsageError("which session? harness unlock SESSION");
    const workspace = await openWorkspace(values.workspace);
    const result = await unlockSession(workspace.harnessDir, sessionId, { force: values.force === true });
    switch (result.outcome) {
      case "no_lock":
        process.stdout.write(`session ${sessionId}: not locked\n`);
        return EXIT.ok;
      case "removed": {
        const owner = result.status.owner ? describeOwner(result.status.owner) : "an unreadable owner";
        process.stdout.write(
          `session ${sessionId}: removed the lock of ${owner}${result.forced ? " (forced)" : ""}\n`,
        );
        return EXIT.ok;
      }
      case "refused":
        process.stderr.write(`${result.message}\n`);
        return EXIT.stopped;
    }
  },
};
