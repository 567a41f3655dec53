import { SessionState } from "../../engine/state.js";
import { type JournalBackend, JournalError } from "../../journal/store.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { DATABASE_HELP, openJournalSource } from "../journal-source.js";
import { statusOf } from "../status.js";

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
    const workspace = await openJournalSource(values);
    const rows = await sessionRows(workspace.backend);
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

/** One listed session: its status (with trust), when it started, its counts and its goal, as the journal says. */
export interface SessionRow {
  session: string;
  status: string;
  started: string | null;
  events: number;
  model_requests: number;
  tool_calls: number;
  goal: string;
}

/** Every session of a journal store as `harness sessions` lists them (also the chat's /sessions). */
export async function sessionRows(backend: JournalBackend): Promise<SessionRow[]> {
  const rows: SessionRow[] = [];
  for (const id of await backend.list()) {
    try {
      const { records, trust } = await backend.readReport(id);
      const state = SessionState.from(records);
      rows.push({
        session: id,
        status: trust.trusted ? statusOf(state) : `untrusted (${statusOf(state)})`,
        started: records[0]?.time ?? null,
        events: state.records,
        model_requests: state.modelRequests,
        tool_calls: state.toolCalls,
        goal: state.goal ?? "",
      });
    } catch (error) {
      // An unusable key file is not one session's damage, and a session directory harness did not
      // make (links, special files: readReport shows foreign journals, it does not throw for them)
      // means the state directory came from elsewhere: both stop the listing with their own message.
      if (error instanceof JournalError && (error.code === "KEY" || error.code === "UNTRUSTED")) throw error;
      const code = error instanceof JournalError ? error.code : "UNREADABLE";
      rows.push({
        session: id,
        status: `damaged (${code})`,
        started: null,
        events: 0,
        model_requests: 0,
        tool_calls: 0,
        goal: "",
      });
    }
  }
  return rows;
}

/** At most `max` characters (whole code points), marked with "..." when cut. */
export function clip(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length > max ? `${chars.slice(0, max - 3).join("")}...` : text;
}
