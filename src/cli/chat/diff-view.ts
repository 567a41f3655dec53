import type { SessionHandle } from "../../session/handle.js";
import { UsageError } from "../../session/usage-error.js";
import { note, own } from "../../ui/lines.js";
import type { ChatUi, UiStyle } from "../../ui/ui.js";
import { netChanges, turnSpan } from "../../undo/history.js";
import { diffLines, fileDiff, totalsLine } from "./changes.js";

/**
 * /diff: the session's net change of the workspace, file by file as `git diff` shows it, from
 * the recorded base to what the record says now (every change a call, an undo or an outside edit
 * made, folded per path); /diff N: what turn N changed (from its input to the next turn's).
 */
export async function diffCommand(
  args: readonly string[],
  context: { ui: ChatUi; style: UiStyle; session: SessionHandle },
): Promise<void> {
  const { ui, style, session } = context;
  if (args.length > 1 || (args[0] !== undefined && !/^[1-9][0-9]{0,8}$/.test(args[0])))
    throw new UsageError("/diff takes one turn number at most: /diff (the whole session) or /diff N");
  const records = await session.records();
  const turn = args[0] === undefined ? undefined : Number(args[0]);
  let span = { from: -1, until: Number.POSITIVE_INFINITY };
  if (turn !== undefined) {
    const found = turnSpan(records, turn);
    const turns = records.filter((r) => r.type === "user.input").length;
    if (found === undefined)
      throw new UsageError(
        turns === 0 ? "the session has no turns yet" : `/diff N takes a turn from 1 to ${turns}`,
      );
    span = found;
  }
  const changes = netChanges(records, span.from, span.until);
  const where = turn === undefined ? "this session (from its recorded base to now)" : `turn ${turn}`;
  if (changes.length === 0) {
    ui.line(own(style, "dim", `no file changes in ${where}`));
    return;
  }
  const sources = await session.contentSources(records);
  const diffs = [];
  for (const change of changes) {
    const diff = await fileDiff(sources, change);
    // Directories show through the files in them, as in git.
    if (diff.kind === "new directory" || diff.kind === "directory removed") continue;
    diffs.push(diff);
    for (const line of diffLines(style, diff)) ui.line(line);
  }
  if (diffs.length === 0) ui.line(note(style, "dim", `only directories changed in ${where}`));
  else ui.line(totalsLine(style, diffs, where));
}
