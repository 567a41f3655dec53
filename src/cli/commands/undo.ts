import { undoSession } from "../../session/operations/undo.js";
import { UsageError } from "../../session/usage-error.js";
import { escapeForTerminal, jsonForTerminal } from "../../shared/terminal-text.js";
import type { UndoReport } from "../../undo/apply.js";
import type { UndoTarget } from "../../undo/plan.js";
import { parse, positiveInt } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { LAST_OPTION, sessionFromArgs } from "../session-id.js";

const HELP = `Usage: harness undo SESSION [--to CALL_ID | --turn N | --seq N] [--dry-run] [--workspace DIR] [--json]

Put the workspace's files back as they were before a point of SESSION, from the session's own
record of every change (file tools and shell commands alike): by default before its last turn;
--to CALL_ID before that call; --turn N before turn N; --seq N as it was right after record N
(the numbers harness inspect shows). SESSION may be the start of an id, or --last.

File by file with compare-and-swap: a file that is no longer exactly what the session left
(edited by a person or another process since) is a conflict: reported, left alone, never
overwritten. The undo is journaled (undo.started with its plan, the changes as call undo:ID,
undo.finished), so it can be undone too: harness undo SESSION --to undo:ID. An undo cut short
(harness killed) is finished by the next harness undo SESSION, or first thing when the session
is resumed or continued, exactly once. The session must
not be running (its writer lock is taken).

Options:
  --to CALL_ID     undo that call and everything after it (undo:ID: an earlier undo)
  --turn N         undo turn N and everything after it
  --seq N          undo everything after record N
  --dry-run        show what would be restored and what conflicts; change nothing
  --workspace, -w DIR   the workspace (default: the current directory)
  --json           print {session, undo_id, target_seq, resumed, dry_run, restored, unchanged, conflicts}

Exit codes: 0 everything restored (or nothing to undo), 1 some files conflicted (listed; the
rest was restored), 5 the journal is refused (locked by a running session, untrusted, torn),
64 usage error.`;

export const undoCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      to: { type: "string" },
      turn: { type: "string" },
      seq: { type: "string" },
      "dry-run": { type: "boolean" },
      json: { type: "boolean" },
      ...LAST_OPTION,
    });
    if (positionals.length > 1)
      throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(" ")}`);
    const target = targetOf(values);
    const { workspace, sessionId } = await sessionFromArgs(
      values.workspace,
      positionals[0],
      values.last,
      "harness undo SESSION",
    );
    const report = await undoSession(workspace, sessionId, target, values["dry-run"] === true);
    process.stdout.write(
      values.json ? `${jsonForTerminal(asJson(sessionId, report))}\n` : describe(sessionId, report),
    );
    return report.outcomes.some((o) => o.outcome === "conflict") ? EXIT.conflicts : EXIT.ok;
  },
};

/** The point --to, --turn or --seq names (none: before the last turn); also the chat's /undo flags. */
export function targetOf(values: {
  to?: string | undefined;
  turn?: string | undefined;
  seq?: string | undefined;
}): UndoTarget {
  const given = [values.to, values.turn, values.seq].filter((v) => v !== undefined);
  if (given.length > 1) throw new UsageError("give one of --to, --turn and --seq");
  if (values.to !== undefined) return { kind: "call", callId: values.to };
  if (values.turn !== undefined) return { kind: "turn", turn: positiveInt(values.turn, "--turn")! };
  if (values.seq !== undefined) {
    if (!/^[0-9]{1,9}$/.test(values.seq))
      throw new UsageError(`--seq must be a record number (see harness inspect), got "${values.seq}"`);
    return { kind: "seq", seq: Number(values.seq) };
  }
  return { kind: "last-turn" };
}

function asJson(session: string, report: UndoReport): unknown {
  const paths = (outcome: string) => report.outcomes.filter((o) => o.outcome === outcome).map((o) => o.path);
  return {
    session,
    undo_id: report.undo_id,
    target_seq: report.target_seq,
    resumed: report.resumed,
    dry_run: report.dry_run,
    restored: paths("restored"),
    unchanged: paths("already"),
    conflicts: report.outcomes.flatMap((o) =>
      o.outcome === "conflict" ? [{ path: o.path, reason: o.reason }] : [],
    ),
  };
}

/** The counts in words, for the chat's /undo and the last line here. */
export function undoSummary(report: UndoReport): string {
  if (report.plan.length === 0) return "nothing to undo: no recorded workspace change after that point";
  const restored = report.outcomes.filter((o) => o.outcome !== "conflict").length;
  const conflicts = report.outcomes.length - restored;
  const verb = report.dry_run ? "would restore" : "restored";
  return (
    `${verb} ${restored} file(s)` +
    (conflicts > 0 ? `, ${conflicts} conflict(s) left alone` : "") +
    (report.undo_id && !report.dry_run ? ` (undo it with --to undo:${report.undo_id})` : "")
  );
}

function describe(session: string, report: UndoReport): string {
  const what = report.dry_run ? "dry run: undo" : report.resumed ? "finished the interrupted undo" : "undo";
  return `${[
    `${what} of session ${escapeForTerminal(session)}: back to record ${report.target_seq}`,
    ...outcomeLines(report),
    undoSummary(report),
  ].join("\n")}\n`;
}

/** One line per file of an undo (escaped): what happened to it, or why it was left alone. */
export function outcomeLines(report: UndoReport): string[] {
  const lines: string[] = [];
  const stepOf = new Map(report.plan.map((s) => [s.path, s]));
  for (const outcome of report.outcomes) {
    const path = escapeForTerminal(outcome.path);
    if (outcome.outcome === "conflict") {
      lines.push(`  conflict  ${path}: ${escapeForTerminal(outcome.reason)}`);
      continue;
    }
    const step = stepOf.get(outcome.path);
    const action = step?.restore === null ? "deleted" : step?.expect === null ? "recreated" : "restored";
    lines.push(`  ${(outcome.outcome === "already" ? "unchanged" : action).padEnd(9)} ${path}`);
  }
  return lines;
}
