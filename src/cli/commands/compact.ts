import { UsageError } from "../../session/usage-error.js";
import { parse } from "../args.js";
import { LAST_OPTION, sessionFromArgs } from "../session-id.js";
import { SESSION_OPTIONS, startOrResume } from "./run.js";

const COMPACT_HELP = `Usage: harness compact SESSION [--instructions TEXT] [options]

Summarize a stopped session's older turns now, as automatic compaction does when the context
fills up: one request without tools asks the model for a handoff summary (--instructions TEXT is
appended to that ask, e.g. "keep the API design decisions"), journaled as model.started (purpose
compaction) and context.compacted. Nothing else runs; the next harness resume sends the goal,
the pinned instructions, the summary and the latest turn instead of the older turns.

Refused, with nothing appended to the journal, when the session is unknown, running (its writer
lock is held: exit 5), untrusted or changed (exit 5), recorded with another workspace, model or
instructions (exit 64), or has nothing older than its latest turn to summarize (exit 64). A
summary request that fails transiently (rate limit, server error, timeout) is retried like any
model request; one that still fails, or a reply without summary text, stops the session as
context_exhausted (exit 2), as automatic compaction does; resume it or try again.

Options: the same as harness resume (--workspace, --script, --provider, --model, --json, ...);
with --json one line {session, workspace, compacted: {replaced_messages, tokens_before,
tokens_after}} is written to stdout.`;

const COMPACT_OPTIONS = { ...SESSION_OPTIONS, ...LAST_OPTION, instructions: { type: "string" } } as const;

export const compactCommand = {
  help: COMPACT_HELP,
  options: COMPACT_OPTIONS,
  async run(args: string[]): Promise<number> {
    const parsed = parse(args, COMPACT_OPTIONS);
    const [given, ...extra] = parsed.positionals;
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
    if (parsed.values.events) throw new UsageError("--events is for runs; harness compact takes --json");
    const instructions = parsed.values.instructions;
    if (instructions !== undefined && instructions.trim() === "")
      throw new UsageError("--instructions needs text (what the summary should keep)");
    const { workspace, sessionId } = await sessionFromArgs(
      parsed.values.workspace,
      given,
      parsed.values.last,
      "harness compact SESSION",
    );
    return startOrResume(
      parsed,
      workspace,
      sessionId,
      "resume",
      undefined,
      instructions !== undefined ? { instructions } : {},
    );
  },
};
