import { SessionState } from "../engine/state.js";
import { JournalError, type JournalStore } from "../journal/store.js";
import { statusOf } from "./status.js";

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
export async function sessionRows(store: JournalStore): Promise<SessionRow[]> {
  const rows: SessionRow[] = [];
  for (const id of await store.list()) {
    try {
      const { records, trust } = await store.readReport(id);
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
