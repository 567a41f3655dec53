import { SessionState } from "../../engine/state.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { UiApprover } from "../../ui/approval.js";
import { LineUi } from "../../ui/line-ui.js";
import type { ChatUi } from "../../ui/ui.js";
import { parse, positiveInt } from "../args.js";
import { workspaceFiles } from "../chat/attachments.js";
import { ChatController } from "../chat/controller.js";
import { ModelCatalog } from "../chat/models.js";
import { EngineChatSession } from "../chat/session.js";
import { loadConfigForCli } from "../governance.js";
import { effectiveFlags } from "../run-flags.js";
import { continuedOrNewSession } from "../session-id.js";
import { buildSetup } from "../setup.js";
import { colorEnabled, createStyle } from "../style.js";
import { UsageError } from "../usage-error.js";
import { newSessionId, openWorkspace } from "../workspace.js";
import { givenFlags, SESSION_OPTIONS, validateSessionId } from "./run.js";

const { json: _json, events: _events, ...CHAT_OPTIONS } = SESSION_OPTIONS;

/** Files larger than this are not read for an approval's diff preview (the arguments still show). */
const PREVIEW_READ_LIMIT = 1024 * 1024;

const HELP = `Usage: harness chat [options]
       harness            (on a terminal, with no arguments)

Talk to an agent in a workspace, turn after turn, in one recorded session. What you type first is
the session's goal; each later message starts the next turn. While a turn runs, what you type is
steering: journaled at once and given to the model at the next step (after the running calls).
Every step is journaled as in harness run; approvals are asked inline.

Keys:
  Enter                  send (Shift-Enter, or a line ending in \\, adds a line; pastes keep their lines)
  Up / Down              earlier inputs
  Esc                    interrupt the running turn (running commands' process trees are killed)
  Ctrl-C                 clear the input, or interrupt; twice exits
  Ctrl-D                 exit (on an empty input)
Approvals own the keyboard while they show: y allows once, s this exact call for the session,
p a command's prefix for the session (shown as the rule it adds, e.g. shell(npm test*); each
simple command of a later line is checked on its own), n or Esc denies; no other key answers,
and nothing typed at a question is sent or steers. An edit or write shows its diff first, a
command its exact text, working directory and sandbox.

Attach files: @path in a message sends the workspace file's content with it (at most 256 KiB a
file, 1 MiB a message; recorded in the journal as part of the message). Tab completes @path
over the workspace's files (what .gitignore ignores is not offered). A path outside the
workspace, in .harness or .git, or one the policy does not let read_file read (.env, keys) is
refused and nothing is sent.

Run a command yourself: !command (between turns) runs it through the same policy, sandbox,
environment filter and secret scrubbing as the model's shell calls and shows its output without
sending it to the model; !!command also sends the command and its output with your next
message. A deny rule refuses it; typing it is your answer to an ask rule. It is journaled
(user.command, then the shell call user:N), so harness undo and audit cover what it changed.

Slash commands: /help /diff /compact /model [NAME] /sessions /fork /quit
(/model NAME switches to a configured profile, or a model id of the one in use, from the next turn;
the switch is journaled as model.switched and a later resume continues with that model; an id the
provider's model list does not have is refused at once, naming the close ones; a provider that
cannot list its models takes the id unchecked, and the chat says so)

Options: those of harness run (model, permissions, --workspace, --accept, limits), except --json
and --events; --session ID continues a recorded session. When stdin or stdout is not a terminal
the chat reads one message per line and prints plain lines; a question's answer is the next line;
a running command's new output lines are printed as they come (escaped, at most twice a second).

Exit codes: 0 when you leave; 64 usage error; 5 journal refused; 1 internal error.`;

export const chatCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const parsed = parse(args, CHAT_OPTIONS);
    if (parsed.positionals.length > 0) {
      throw new UsageError(
        `harness chat takes no goal argument (type it in the chat); for one goal use: harness run ${parsed.positionals.join(" ")}`,
      );
    }
    const values = parsed.values;
    const workspace = await openWorkspace(values.workspace);
    const named =
      values.session === undefined ? undefined : await continuedOrNewSession(workspace, values.session);
    const sessionId = named?.sessionId ?? newSessionId();
    validateSessionId(sessionId);
    const existing = named?.existing === true;
    const records = existing ? await workspace.backend.read(sessionId) : [];
    const state = records.length > 0 ? SessionState.from(records) : undefined;
    const recorded = state?.header;
    const terminal = process.stdin.isTTY === true && process.stdout.isTTY === true;
    const style = createStyle(colorEnabled(process.stdout));
    // Questions are answered in the chat itself, on a terminal or as the next input line.
    // The options the session last recorded: its start's, or those of its latest model switch.
    const flags = effectiveFlags(givenFlags(values), state?.options, true);
    const ui: ChatUi = terminal
      ? new (await import("../../ui/pi-tui.js")).PiTui(style, { files: () => workspaceFiles(workspace.fs) })
      : new LineUi(process.stdin, process.stdout, style);
    const approver = new UiApprover(ui, style, async (path) => {
      try {
        const stat = await workspace.fs.stat(path);
        if (stat === undefined || stat.size > PREVIEW_READ_LIMIT) return undefined;
        return new TextDecoder().decode(await workspace.fs.readFile(path));
      } catch {
        return undefined;
      }
    });
    const setup = await buildSetup({
      workspace,
      flags,
      ...(values.script !== undefined ? { script: values.script } : {}),
      interactive: true,
      records,
      approver,
      mcp: (line) => process.stderr.write(`${line}\n`),
    });
    for (const notice of setup.notices) process.stderr.write(`harness: note: ${escapeForTerminal(notice)}\n`);
    const acceptTimeout = positiveInt(values["accept-timeout"], "--accept-timeout") ?? 600_000;
    const limits = {
      ...optional("maxModelRequests", positiveInt(values["max-model-requests"], "--max-model-requests")),
      ...optional("maxToolCalls", positiveInt(values["max-tool-calls"], "--max-tool-calls")),
      ...optional("poolSize", positiveInt(values["pool-size"], "--pool-size")),
    };
    const session = new EngineChatSession(
      {
        workspace,
        sessionId,
        mode: existing ? "resume" : "new",
        setup,
        acceptance: (values.accept ?? recorded?.acceptance ?? []).map((command) =>
          setup.acceptanceCheck(command, acceptTimeout),
        ),
        limits: {
          ...limits,
          contextWindowTokens: setup.context.window,
          replyReserveTokens: setup.context.reserve,
        },
        acceptToolChanges: values["accept-tool-changes"] === true,
      },
      existing,
      new ModelCatalog(await loadConfigForCli(workspace.root), values.script !== undefined),
    );
    return new ChatController(ui, session, style, {
      root: workspace.root,
      fs: workspace.fs,
      permissions: setup.policy.permissions,
    }).run();
  },
};

function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}
