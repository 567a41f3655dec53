import { userInfo } from "node:os";
import { resolveReview, unknownOutcomes } from "../../session/operations/review.js";
import { UsageError } from "../../session/usage-error.js";
import { escapeForTerminal, jsonForTerminal } from "../../shared/terminal-text.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { resumeCommand, unrecordedPlaceholders } from "../next-steps.js";
import { LAST_OPTION, sessionFromArgs } from "../session-id.js";

const HELP = `Usage: harness review SESSION                       list calls whose outcome is unknown
       harness review SESSION CALL_ID --applied|--not-applied|--undetermined --evidence TEXT [--by NAME]

A call that started but whose outcome was never recorded is "unknown": harness never guesses and
never runs it again, so the session stops for review. After checking the workspace (or the
external system) yourself, record what you found. The resolution and its evidence are journaled
(review.resolved) and shown to the model next to the call's result; once every unknown outcome is
resolved as applied or not applied, "harness resume SESSION" continues the session. A call resolved
as applied or not applied keeps that resolution (a resumed run may have acted on it).`;

export const reviewCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      applied: { type: "boolean" },
      "not-applied": { type: "boolean" },
      undetermined: { type: "boolean" },
      evidence: { type: "string" },
      by: { type: "string" },
      json: { type: "boolean" },
      ...LAST_OPTION,
    });
    // With --last the first word is the call id.
    const [given, callId] = values.last ? [undefined, ...positionals] : positionals;
    const { workspace, sessionId } = await sessionFromArgs(
      values.workspace,
      given,
      values.last,
      "harness review SESSION [CALL_ID ...]",
    );
    if (!callId) {
      const unknown = await unknownOutcomes(workspace.store, sessionId);
      if (values.json) {
        process.stdout.write(
          `${JSON.stringify(unknown.map((r) => ({ call_id: r.call_id, name: r.name, summary: r.summary })))}\n`,
        );
      } else if (unknown.length === 0) {
        process.stdout.write(`session ${sessionId}: no unresolved unknown outcomes\n`);
      } else {
        for (const r of unknown) {
          const args = jsonForTerminal(r.arguments);
          process.stdout.write(
            `${escapeForTerminal(r.call_id)}  ${escapeForTerminal(r.name)}  ${args.length > 100 ? `${args.slice(0, 99)}…` : args}\n`,
          );
        }
      }
      return EXIT.ok;
    }
    const chosen = (["applied", "not-applied", "undetermined"] as const).filter((flag) => values[flag]);
    if (chosen.length !== 1)
      throw new UsageError("give exactly one of --applied, --not-applied, --undetermined");
    const { left, state } = await resolveReview(workspace.store, sessionId, {
      callId,
      resolution: chosen[0] === "not-applied" ? "not_applied" : chosen[0]!,
      evidence: values.evidence ?? "",
      by: values.by ?? userInfo().username,
    });
    process.stdout.write(
      left === 0
        ? `recorded; no unknown outcomes remain: continue with ${escapeForTerminal(resumeCommand(sessionId, workspace, unrecordedPlaceholders(state.provider)))}\n`
        : `recorded; ${left} unknown outcome(s) still need review\n`,
    );
    return EXIT.ok;
  },
};
