import type { EngineListener } from "../../engine/options.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import { note, own, quoted } from "../../ui/lines.js";
import type { ChatUi, UiStyle } from "../../ui/ui.js";
import type { ChatSession } from "./session.js";

export interface SlashContext {
  ui: ChatUi;
  style: UiStyle;
  session: ChatSession;
  /** Whether a turn is running (commands that use the journal wait for it to end). */
  running: boolean;
  leave(): void;
  listener: EngineListener;
}

const HELP: readonly [string, string][] = [
  ["/help", "this list"],
  ["/diff", "the file changes made in this session"],
  ["/compact", "summarize the older turns now (between turns)"],
  ["/model", "the model in use and the configured ones; /model NAME switches from the next turn"],
  ["/sessions", "the sessions recorded in this workspace"],
  ["/fork", "continue from here in a new session (the journal stays as it is)"],
  ["/undo", "put the files back as they were before the last turn (changed since: left alone)"],
  ["/quit", "leave the chat (also Ctrl-D on an empty input, or Ctrl-C twice)"],
];

/** The chat's slash commands; an unknown one says which exist. */
export async function runSlash(text: string, context: SlashContext): Promise<void> {
  const { ui, style, session } = context;
  const [name = "", ...args] = text.trim().split(/\s+/);
  const say = (line: string) => ui.line(own(style, "plain", line));
  const betweenTurns = () => {
    if (context.running)
      ui.line(own(style, "warn", `${name} runs between turns: wait for this one or press Esc`));
    return !context.running;
  };
  try {
    switch (name) {
      case "/help":
        for (const [command, what] of HELP) say(`  ${style.bold(command.padEnd(10))} ${what}`);
        say(style.dim("  Keys: Enter sends · Shift-Enter or a trailing \\ adds a line · Up/Down history"));
        say(style.dim("        Esc interrupts · Ctrl-C clears the input or interrupts, twice exits"));
        say(style.dim("  @path attaches a workspace file (Tab completes) · approvals: y once · s session"));
        say(style.dim("        · p the command's prefix for the session · n or Esc denies"));
        say(style.dim("  !command runs it here between turns (policy and sandbox as the model's shell;"));
        say(
          style.dim(
            "        output shown, not sent to the model) · !!command also sends it with your next message",
          ),
        );
        return;
      case "/quit":
      case "/exit":
        context.leave();
        return;
      case "/model":
        if (args.length > 1) {
          ui.line(own(style, "warn", "/model takes one name: a configured profile, or a model id"));
          return;
        }
        if (args[0] === undefined) await listModels(context);
        else await switchModel(args[0], context);
        return;
      case "/sessions": {
        const ids = await session.sessions();
        if (ids.length === 0) say("no sessions recorded in this workspace yet");
        for (const id of ids) {
          ui.line(
            note(
              style,
              id === session.sessionId ? "ok" : "plain",
              id === session.sessionId ? "* " : "  ",
              id,
            ),
          );
        }
        return;
      }
      case "/diff":
        if (!betweenTurns()) return;
        showDiff(await session.records(), ui, style);
        return;
      case "/compact":
        if (!betweenTurns()) return;
        if (!session.started) {
          say("nothing to compact yet: the session starts with your first message");
          return;
        }
        ui.line(note(style, "dim", await session.compact(context.listener)));
        return;
      case "/fork": {
        if (!betweenTurns()) return;
        if (!session.started) {
          say("nothing to fork yet: the session starts with your first message");
          return;
        }
        const parent = session.sessionId;
        const child = await session.fork();
        ui.line(
          note(style, "ok", "forked: now in session ", child, " (from ", parent, ", which stays as it is)"),
        );
        return;
      }
      case "/undo":
        if (!betweenTurns()) return;
        if (!session.started) {
          say("nothing to undo yet: the session starts with your first message");
          return;
        }
        ui.line(note(style, "ok", await session.undo()));
        return;
      default:
        ui.line(note(style, "warn", "unknown command ", name, "; try /help"));
    }
  } catch (error) {
    ui.line(note(style, "error", `${name}: `, error instanceof Error ? error.message : String(error)));
  }
}

/** /model: the model in use, the configured profiles (as `harness models` lists them), what the provider offers. */
async function listModels({ ui, style, session }: SlashContext): Promise<void> {
  const listing = await session.models();
  ui.line(
    note(
      style,
      "plain",
      "model: ",
      listing.model,
      ...(listing.profile !== undefined ? [" (profile ", listing.profile, ")"] : []),
    ),
  );
  if (listing.profiles.length === 0) {
    ui.line(own(style, "dim", "no model profiles configured (create one with: harness init)"));
  }
  for (const row of listing.profiles) {
    ui.line(
      note(
        style,
        row.name === listing.profile ? "ok" : "plain",
        row.default ? "* " : "  ",
        row.name,
        "  ",
        row.provider,
        "  ",
        row.model,
        ...(row.baseUrl !== undefined ? ["  ", row.baseUrl] : []),
      ),
    );
  }
  const offered = listing.offered;
  if (offered !== undefined && "models" in offered && offered.models.length > 0) {
    ui.line(
      note(
        style,
        "dim",
        listing.profile !== undefined
          ? `offered to profile ${listing.profile}: `
          : "offered by the provider: ",
        offered.models.join(", "),
      ),
    );
  } else if (offered !== undefined && "error" in offered) {
    ui.line(note(style, "dim", "the provider's model list: ", offered.error));
  }
  ui.line(
    own(
      style,
      "dim",
      "/model NAME switches from the next turn: a profile above, or a model id the provider in use offers",
    ),
  );
}

/** /model NAME: the next turn talks to it; the switch is journaled when that turn starts. */
async function switchModel(name: string, { ui, style, session, running }: SlashContext): Promise<void> {
  const switched = await session.switchModel(name);
  for (const notice of switched.notices) ui.line(note(style, "warn", "note: ", notice));
  ui.line(
    note(
      style,
      "ok",
      "model: ",
      switched.model,
      ...(switched.profile !== undefined ? [" (profile ", switched.profile, ")"] : []),
      running ? " from the next turn" : "",
      session.started ? "; the journal records the switch (model.switched) if it changes the model" : "",
    ),
  );
}

/** Each file the session changed (write_file, edit_file results that succeeded), with what it did. */
function showDiff(records: readonly AnyRecord[], ui: ChatUi, style: UiStyle): void {
  let shown = 0;
  for (const record of records) {
    if (record.type !== "tool.result" || record.data.status !== "ok") continue;
    if (record.data.name !== "edit_file" && record.data.name !== "write_file") continue;
    const path = record.data.data?.path;
    ui.line(
      note(
        style,
        "plain",
        `${record.data.name} `,
        typeof path === "string" ? path : "?",
        ": ",
        record.data.summary,
      ),
    );
    for (const line of quoted(style, record.data.content)) ui.line(line);
    shown += 1;
  }
  if (shown === 0) ui.line(own(style, "dim", "no file changes in this session yet"));
}
