import { DATABASE_HELP, openJournalSource } from "../../session/journal-source.js";
import { sessionRows } from "../../session/listing.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { stderrNotices } from "../notices.js";

const HELP = `Usage: harness sessions [--workspace DIR | --database URL] [--json]

List the sessions recorded in a workspace with their status, activity and goal.
${DATABASE_HELP}`;

export const sessionsCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values } = parse(args, {
      workspace: { type: "string", short: "w" },
      database: { type: "string" },
      json: { type: "boolean" },
    });
    const workspace = await openJournalSource(values, { notify: stderrNotices });
    const rows = await sessionRows(workspace.store);
    if (values.json) {
      process.stdout.write(`${JSON.stringify(rows)}\n`);
      return EXIT.ok;
    }
    if (rows.length === 0) {
      process.stdout.write(`no sessions in ${workspace.where}\n`);
      return EXIT.ok;
    }
    // The goal and the status come from the journal, which may not be the user's own: escaped.
    const shown = rows.map((r) => ({
      ...r,
      session: escapeForTerminal(r.session),
      status: escapeForTerminal(r.status),
      goal: escapeForTerminal(clip(r.goal, 60)),
    }));
    const width = Math.max(7, ...shown.map((r) => r.session.length));
    process.stdout.write(`${"SESSION".padEnd(width)}  ${"STATUS".padEnd(26)}  REQ  CALLS  GOAL\n`);
    for (const r of shown) {
      process.stdout.write(
        `${r.session.padEnd(width)}  ${r.status.padEnd(26)}  ${String(r.model_requests).padStart(3)}  ${String(r.tool_calls).padStart(5)}  ${r.goal}\n`,
      );
    }
    return EXIT.ok;
  },
};

/** At most `max` characters (whole code points), marked with "..." when cut. */
export function clip(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length > max ? `${chars.slice(0, max - 3).join("")}...` : text;
}
