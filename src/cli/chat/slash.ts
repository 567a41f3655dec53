import type { EngineListener } from "../../engine/options.js";
import type { SessionHandle } from "../../session/handle.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { note, own } from "../../ui/lines.js";
import type { ChatUi, UiStyle } from "../../ui/ui.js";
import { clip } from "../commands/sessions.js";
import { diffCommand } from "./diff-view.js";
import { redoCommand, UNDO_USAGE, undoCommand } from "./undo-picker.js";

export interface SlashContext {
  ui: ChatUi;
  style: UiStyle;
  session: SessionHandle;
  /** Whether a turn is running (commands that use the journal wait for it to end). */
  running: boolean;
  leave(): void;
  listener: EngineListener;
  /** Aborted when the person leaves: an open picker closes. */
  signal: AbortSignal;
}

const HELP: readonly [string, string][] = [
  ["/help", "this list"],
  ["/diff", "the session's changes to the workspace, per file as git diff shows them; /diff N: turn N's"],
  ["/compact", "summarize the older turns now (between turns)"],
  ["/model", "the model in use and the configured ones; /model NAME switches from the next turn"],
  ["/sessions", "the workspace's sessions with status and goal; /sessions ID switches (a prefix will do)"],
  ["/fork", "continue from here in a new session (the journal stays as it is)"],
  ["/undo", `pick a turn or call to put the files back to before it; ${UNDO_USAGE.slice(6)} as harness undo`],
  ["/redo", "take back the last /undo (files changed since are left alone)"],
  [
    "/image",
    "/image PATH [message]: send an image file (PNG, JPEG, GIF, WebP; 5 MB, 8000 px) with a message",
  ],
  ["/quit", "leave the chat (also Ctrl-D on an empty input, or Ctrl-C twice)"],
];

/** The built-in commands' names: they win over a command template of the same name. */
export const BUILTIN_COMMANDS: ReadonlySet<string> = new Set([
  ...HELP.map(([name]) => name),
  "/exit",
  "/image",
]);

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
        for (const [command, what] of HELP)
          say(`  ${style.bold(command.padEnd(10))} ${escapeForTerminal(what)}`);
        say(style.dim("  Keys: Enter sends · Shift-Enter or a trailing \\ adds a line · Up/Down history"));
        say(style.dim("        Esc interrupts · Ctrl-C clears the input or interrupts, twice exits"));
        say(style.dim("  @path attaches a workspace file (Tab completes) · approvals: y once · s session"));
        say(style.dim("        · p the command's prefix for the session · n or Esc denies"));
        say(
          style.dim(
            "  /NAME args expands a command template (.agents/commands or ~/.config/harness/commands;",
          ),
        );
        say(
          style.dim("        $ARGUMENTS, $1..$9); the commands above win over a template of the same name"),
        );
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
      case "/sessions":
        if (args.length > 1) {
          ui.line(own(style, "warn", "/sessions takes one session id (or the start of one)"));
          return;
        }
        if (args[0] === undefined) await listSessions(context);
        else {
          if (!betweenTurns()) return;
          const before = session.sessionId;
          const id = await session.switchTo(args[0]);
          ui.line(
            id === before
              ? note(style, "plain", "already in session ", id)
              : note(style, "ok", "now in session ", id, ": your next message is its next turn"),
          );
        }
        return;
      case "/diff":
        if (!betweenTurns()) return;
        await diffCommand(args, context);
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
      case "/redo":
        if (!betweenTurns()) return;
        if (!session.started) {
          say(`nothing to ${name.slice(1)} yet: the session starts with your first message`);
          return;
        }
        await (name === "/undo" ? undoCommand(args, context) : redoCommand(args, context));
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

/** /sessions: each session of the workspace with its status and goal; the chat's own marked. */
async function listSessions({ ui, style, session }: SlashContext): Promise<void> {
  const rows = await session.sessions();
  if (rows.length === 0) {
    ui.line(own(style, "plain", "no sessions recorded in this workspace yet"));
    return;
  }
  const width = Math.max(...rows.map((r) => escapeForTerminal(r.session).length));
  for (const row of rows) {
    const mine = row.session === session.sessionId;
    ui.line(
      note(
        style,
        mine ? "ok" : "plain",
        mine ? "* " : "  ",
        row.session.padEnd(width),
        "  ",
        row.status.padEnd(14),
        "  ",
        clip(row.goal.replace(/\s+/g, " "), 60),
      ),
    );
  }
  ui.line(own(style, "dim", "/sessions ID switches to one (the start of its id will do)"));
}
