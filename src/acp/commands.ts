import type { AvailableCommand } from "@agentclientprotocol/sdk";
import { type Extensions, usable } from "../session/extensions/discover.js";
import type { EngineSession } from "../session/handle.js";
import { UsageError } from "../session/usage-error.js";
import { unifiedDiff } from "../shared/unified-diff.js";
import { netChanges, recordedContent, turnSpan } from "../undo/history.js";
import type { UndoTarget } from "../undo/plan.js";

/** The commands an editor offers in its prompt, with the chat's semantics. */
export const ACP_COMMANDS: AvailableCommand[] = [
  {
    name: "undo",
    description:
      "put the files back to before a turn (journaled, compare-and-swap per file): /undo (the last turn), /undo N, /undo --to CALL_ID, /undo --seq N",
    input: { hint: "[N | --to CALL_ID | --seq N]" },
  },
  {
    name: "diff",
    description: "the session's net change per file; /diff N: what turn N changed",
    input: { hint: "[N]" },
  },
  { name: "compact", description: "summarize the older turns now (one summary request, journaled)" },
  { name: "fork", description: "continue in a new session holding this one's history; its id is shown" },
  {
    name: "model",
    description:
      "the model in use; /model NAME switches to a configured profile or model id from the next turn",
    input: { hint: "[NAME]" },
  },
];

/**
 * The command templates the session loaded (the user's, and the project's approved by digest), as
 * commands the editor offers; a template named like one of harness's own commands is shadowed by
 * it (the prompt runs harness's), so it is not offered.
 */
export function templateCommands(extensions: Pick<Extensions, "commands"> | undefined): AvailableCommand[] {
  return (extensions?.commands ?? [])
    .filter((entry) => usable(entry) && !ACP_COMMANDS.some((command) => command.name === entry.name))
    .map((entry) => ({
      name: entry.name,
      description: entry.description ?? `prompt template (${entry.source})`,
      input: { hint: "[arguments]" },
    }));
}

/** A prompt that is one of the commands: its name and words; undefined for an ordinary prompt. */
export function commandOf(text: string): { name: string; args: string[] } | undefined {
  const match = /^\/([a-z]+)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return undefined;
  const name = match[1] as string;
  if (!ACP_COMMANDS.some((command) => command.name === name)) return undefined;
  const args = (match[2] ?? "").split(/\s+/).filter((word) => word.length > 0);
  return { name, args };
}

/** What a command's answer says (shown as the agent's message); `sessionId` when /fork moved on. */
export interface CommandAnswer {
  text: string;
}

/** Run a command on the session, as the chat's slash command does; its answer in words. */
export async function runCommand(
  session: EngineSession,
  name: string,
  args: readonly string[],
): Promise<CommandAnswer> {
  switch (name) {
    case "undo": {
      if (!session.started) return { text: "nothing to undo yet: the session has no turns" };
      const report = await session.undo(undoTarget(args));
      const restored = report.outcomes.filter((step) => step.outcome === "restored").length;
      const conflicts = report.outcomes.flatMap((step) => (step.outcome === "conflict" ? [step] : []));
      const lines = [
        report.undo_id === null
          ? "nothing to undo: the files are already as they were then"
          : `undo ${report.undo_id}: ${restored} file(s) put back (to record ${report.target_seq})`,
        ...conflicts.map((step) => `  left alone: ${step.path} (${step.reason})`),
      ];
      return { text: lines.join("\n") };
    }
    case "diff":
      return { text: await diffText(session, args) };
    case "compact":
      if (!session.started) return { text: "nothing to compact: the session has no turns" };
      return { text: await session.compact() };
    case "fork": {
      if (!session.started) return { text: "nothing to fork: the session has no turns" };
      const parent = session.sessionId;
      const child = await session.fork();
      return {
        text: `forked ${parent} into ${child}; this editor session goes on in ${parent} (load ${child} to continue the fork)`,
      };
    }
    case "model": {
      if (args.length === 0) {
        const listing = await session.models();
        const profiles = listing.profiles.map((profile) => `  ${profile.name}`).join("\n");
        return { text: `model: ${listing.model}${profiles ? `\nprofiles:\n${profiles}` : ""}` };
      }
      const switched = await session.switchModel(args.join(" "));
      return { text: [`from the next turn: ${switched.model}`, ...switched.notices].join("\n") };
    }
    default:
      throw new UsageError(`unknown command /${name}`);
  }
}

function undoTarget(args: readonly string[]): UndoTarget {
  if (args.length === 0) return { kind: "last-turn" };
  const [first, second] = args;
  const number = (word: string | undefined): number => {
    if (word === undefined || !/^[1-9][0-9]{0,8}$/.test(word))
      throw new UsageError("/undo takes N, --to CALL_ID or --seq N");
    return Number(word);
  };
  if (first === "--to" && second !== undefined) return { kind: "call", callId: second };
  if (first === "--seq") return { kind: "seq", seq: number(second) };
  if (first === "--turn") return { kind: "turn", turn: number(second) };
  return { kind: "turn", turn: number(first) };
}

async function diffText(session: EngineSession, args: readonly string[]): Promise<string> {
  if (args.length > 1 || (args[0] !== undefined && !/^[1-9][0-9]{0,8}$/.test(args[0])))
    throw new UsageError("/diff takes one turn number at most: /diff (the whole session) or /diff N");
  const records = await session.records();
  let span = { from: -1, until: Number.POSITIVE_INFINITY };
  if (args[0] !== undefined) {
    const found = turnSpan(records, Number(args[0]));
    if (found === undefined) throw new UsageError(`the session has no turn ${args[0]}`);
    span = found;
  }
  const changes = netChanges(records, span.from, span.until);
  if (changes.length === 0) return "no file changes";
  const sources = await session.contentSources(records);
  const decoder = new TextDecoder();
  const parts: string[] = [];
  for (const change of changes) {
    const [before, after] = await Promise.all([
      recordedContent(sources, change.path, change.before),
      recordedContent(sources, change.path, change.after),
    ]);
    if (before === undefined && after === undefined) {
      parts.push(`${change.path}: changed (no text recorded)`);
      continue;
    }
    parts.push(
      unifiedDiff(change.path, before ? decoder.decode(before) : null, after ? decoder.decode(after) : null),
    );
  }
  return parts.join("\n");
}
