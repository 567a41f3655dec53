import type { AnyRecord } from "../../journal/vocabulary.js";
import type { SessionHandle } from "../../session/handle.js";
import { UsageError } from "../../session/usage-error.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { note, own } from "../../ui/lines.js";
import type { ChatLine, ChatUi, UiStyle } from "../../ui/ui.js";
import type { UndoReport } from "../../undo/apply.js";
import { type ContentSources, redoable, turnHistory } from "../../undo/history.js";
import type { UndoTarget } from "../../undo/plan.js";
import { outcomeLines, targetOf, undoSummary } from "../commands/undo.js";
import { changeBrief, fileDiff } from "./changes.js";

/**
 * The chat's /undo and /redo, on the same journaled undo as `harness undo` (undo/apply.ts:
 * `undo.started` with the plan first, compare-and-swap per file, `undo.finished`): /undo opens a
 * picker of the session's turns and calls with what each changed, or takes the CLI's points
 * (`N` or `--turn N`, `--to CALL_ID`, `--seq N`); /redo undoes the last undo (`--to undo:ID`).
 */

export const UNDO_USAGE = "/undo [N | --turn N | --to CALL_ID | --seq N]";

/** /undo's words as the CLI's flags: a bare number is a turn. Undefined: no point named (the picker). */
export function undoTargetOf(args: readonly string[]): UndoTarget | undefined {
  if (args.length === 0) return undefined;
  const values: { to?: string; turn?: string; seq?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const word = args[i] as string;
    const [flag, inline] = word.startsWith("--") ? word.split(/=(.*)/s, 2) : [word, undefined];
    const value = () => {
      const next = inline ?? args[++i];
      if (next === undefined) throw new UsageError(`${flag} needs a value: ${UNDO_USAGE}`);
      return next;
    };
    if (flag === "--to") values.to = value();
    else if (flag === "--turn") values.turn = value();
    else if (flag === "--seq") values.seq = value();
    else if (/^[0-9]+$/.test(word) && values.turn === undefined) values.turn = word;
    else throw new UsageError(`unexpected ${JSON.stringify(word)}: ${UNDO_USAGE}`);
  }
  return targetOf(values);
}

/** One row of the picker: the line shown and the point it undoes back to. */
interface Choice {
  row: ChatLine;
  target: UndoTarget;
}

/**
 * The picker's rows, newest first (so Enter alone undoes the last turn): each turn with what was
 * typed and its totals, then each of its calls that changed files, with the files and their
 * added and removed lines. Every row undoes that turn or call and everything after it.
 */
export async function undoChoices(
  records: readonly AnyRecord[],
  sources: ContentSources,
  style: UiStyle,
): Promise<Choice[]> {
  const choices: Choice[] = [];
  for (const turn of turnHistory(records).reverse()) {
    const calls: Choice[] = [];
    let files = 0;
    let added = 0;
    let removed = 0;
    for (const call of turn.calls) {
      const diffs = await Promise.all(call.changes.map((change) => fileDiff(sources, change)));
      const shown = diffs.filter((d) => d.kind !== "new directory" && d.kind !== "directory removed");
      files += shown.length;
      added += shown.reduce((n, d) => n + d.added, 0);
      removed += shown.reduce((n, d) => n + d.removed, 0);
      const who = call.tool !== undefined ? `${call.tool} ${call.callId}` : call.callId;
      calls.push({
        row: {
          text: `    ${style.bold(escapeForTerminal(who))}  ${escapeForTerminal(
            clip(shown.map(changeBrief).join(", ") || "directories only", 90),
          )}`,
        },
        target: { kind: "call", callId: call.callId },
      });
    }
    const what =
      files === 0
        ? "no file changes"
        : `${files} file${files === 1 ? "" : "s"} changed, +${added} -${removed}`;
    choices.push({
      row: {
        text: `${style.bold(`turn ${turn.turn}`)}  “${escapeForTerminal(clip(oneLine(turn.text), 50))}”  ${style.dim(what)}`,
      },
      target: { kind: "turn", turn: turn.turn },
    });
    choices.push(...calls.reverse());
  }
  return choices;
}

/** /undo: the point named, or the one picked; then the undo, and what it did. */
export async function undoCommand(
  args: readonly string[],
  context: { ui: ChatUi; style: UiStyle; session: SessionHandle; signal: AbortSignal },
): Promise<void> {
  const { ui, style, session } = context;
  let target = undoTargetOf(args);
  if (target === undefined) {
    const records = await session.records();
    const choices = await undoChoices(records, await session.contentSources(records), style);
    if (choices.length === 0) {
      ui.line(own(style, "plain", "nothing to undo yet: the session has no turns"));
      return;
    }
    const picked = await ui.pick(
      {
        title: own(style, "plain", "Undo back to before (that turn or call and everything after it):"),
        rows: choices.map((c) => c.row),
      },
      context.signal,
    );
    if (picked === undefined) {
      ui.line(own(style, "dim", "undo cancelled: nothing changed"));
      return;
    }
    target = (choices[picked] as Choice).target;
  }
  showUndo(await session.undo(target), ui, style, true);
}

/** /redo: undo the last undo, as `harness undo SESSION --to undo:ID` would. */
export async function redoCommand(
  args: readonly string[],
  context: { ui: ChatUi; style: UiStyle; session: SessionHandle },
): Promise<void> {
  const { ui, style, session } = context;
  if (args.length > 0) throw new UsageError("/redo takes no arguments (it undoes the last /undo)");
  const undoId = redoable(await session.records());
  if (undoId === undefined) {
    ui.line(
      own(
        style,
        "plain",
        "nothing to redo: no undo since the last change (a change after an undo ends its redo)",
      ),
    );
    return;
  }
  showUndo(await session.undo({ kind: "call", callId: `undo:${undoId}` }), ui, style, false);
}

function showUndo(report: UndoReport, ui: ChatUi, style: UiStyle, offerRedo: boolean): void {
  for (const line of outcomeLines(report))
    ui.line(own(style, line.startsWith("  conflict") ? "warn" : "plain", line));
  const conflicts = report.outcomes.some((o) => o.outcome === "conflict");
  ui.line(note(style, conflicts ? "warn" : "ok", undoSummary(report)));
  if (offerRedo && report.undo_id !== null) ui.line(own(style, "dim", "  /redo takes it back"));
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function clip(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : text;
}
