import { SessionState } from "../../engine/state.js";
import { ConfiguredModels } from "../../session/configured-models.js";
import { EngineSession } from "../../session/handle.js";
import { type PreparedSession, prepareSession } from "../../session/prepare.js";
import { validateSessionId } from "../../session/session-id.js";
import { UsageError } from "../../session/usage-error.js";
import { newSessionId, openWorkspace } from "../../session/workspace.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { MAX_DIFF_BYTES } from "../../shared/unified-diff.js";
import { UiApprover } from "../../ui/approval.js";
import { LineUi } from "../../ui/line-ui.js";
import type { ChatUi } from "../../ui/ui.js";
import { parse } from "../args.js";
import { workspaceFiles } from "../chat/attachments.js";
import { ChatController } from "../chat/controller.js";
import { hint } from "../hints.js";
import { latestSession } from "../latest-session.js";
import { chatContinueCommand } from "../next-steps.js";
import { stderrNotices } from "../notices.js";
import { output } from "../output.js";
import { byPrefix, continuedOrNewSession } from "../session-id.js";
import { callShow } from "../session-runner.js";
import { colorEnabled, createStyle } from "../style.js";
import { argvConfig, QUIET_CALLS_HELP, SESSION_OPTIONS, SHOW_OPTIONS, unrecordedFlags } from "./run.js";

const { json: _json, events: _events, ...SESSION_FLAGS } = SESSION_OPTIONS;
const CHAT_OPTIONS = {
  ...SESSION_FLAGS,
  ...SHOW_OPTIONS,
  continue: { type: "boolean", short: "c" },
} as const;

const HELP = `Usage: harness chat [options]
       harness chat --continue [options]     (-c: the workspace's latest session, as run -c)
       harness chat --session ID [options]   (a recorded session; a new one with that id otherwise)
       harness            (on a terminal, with no arguments)

Talk to an agent in a workspace, turn after turn, in one recorded session. What you type first is
the session's goal; each later message starts the next turn. While a turn runs, what you type is
steering: journaled at once and given to the model at the next step (after the running calls).
Every step is journaled as in harness run; approvals are asked inline. Leaving prints the session's
id and the command that continues it.

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

Slash commands (between turns; /help lists them):
  /undo                  pick a turn or call (each with the files it changed, +/- lines) and put
                         the files back to before it; /undo N (turn N), /undo --to CALL_ID,
                         /undo --seq N as harness undo takes them. Journaled, file by file with
                         compare-and-swap: a file changed since is left alone and reported
  /redo                  take back the last /undo (harness undo --to undo:ID)
  /diff                  the session's net change, per file as git diff shows it (recorded base
                         to now); /diff N: what turn N changed
  /sessions              the workspace's sessions with status and goal; /sessions ID switches
                         to one (a unique start of its id will do) after resume's checks
  /model [NAME]          the model in use; NAME switches to a configured profile, or a model id
                         of the one in use, from the next turn (journaled as model.switched; an
                         id the provider's list lacks is refused, naming the close ones)
  /compact /fork /help /quit

Options: those of harness run (model, permissions, --workspace, --accept, limits), except --json
and --events; --session ID continues a recorded session, --continue (-c) the latest one.
${QUIET_CALLS_HELP}
A finished call shows its status line, then an edit's diff and a command's output (its first and
last lines; off a terminal its lines were printed as they came); a failed --accept check shows its
output. -q (harness -q chat) hides them too. When stdin or stdout is not a terminal the chat reads
one message per line and prints plain lines; a question's or a picker's answer is the next line; a
running command's new output lines are printed as they come (escaped, at most twice a second).

Exit codes: 0 when you leave; 64 usage error; 5 journal refused; 1 internal error.`;

export const chatCommand = {
  help: HELP,
  options: CHAT_OPTIONS,
  async run(args: string[]): Promise<number> {
    const parsed = parse(args, CHAT_OPTIONS);
    if (parsed.positionals.length > 0) {
      throw new UsageError(
        `harness chat takes no goal argument (type it in the chat); for one goal use: harness run ${parsed.positionals.join(" ")}`,
      );
    }
    const values = parsed.values;
    const workspace = await openWorkspace(values.workspace, { notify: stderrNotices });
    if (values.continue && values.session !== undefined)
      throw new UsageError("--continue takes the latest session; --session names one: choose one");
    const latest = values.continue ? await latestSession(workspace) : undefined;
    if (values.continue && latest === undefined)
      throw new UsageError(
        `no session to continue in ${workspace.root}; start one with: ${hint("chat", workspace)}`,
      );
    const named =
      values.session === undefined ? undefined : await continuedOrNewSession(workspace, values.session);
    const sessionId = latest ?? named?.sessionId ?? newSessionId();
    validateSessionId(sessionId);
    const existing = latest !== undefined || named?.existing === true;
    const terminal = process.stdin.isTTY === true && process.stdout.isTTY === true;
    const style = createStyle(colorEnabled(process.stdout));
    const ui: ChatUi = terminal
      ? new (await import("../../ui/pi-tui.js")).PiTui(style, { files: () => workspaceFiles(workspace.fs) })
      : new LineUi(process.stdin, process.stdout, style);
    // Questions are answered in the chat itself, on a terminal or as the next input line.
    const approver = new UiApprover(ui, style, async (path) => {
      try {
        const stat = await workspace.fs.stat(path);
        if (stat === undefined) return undefined;
        if (stat.size > MAX_DIFF_BYTES) return { size: stat.size };
        return await workspace.fs.readFile(path);
      } catch {
        return undefined;
      }
    });
    const config = argvConfig(values);
    /** A session of this workspace set up as this command line sets it up: its recorded flags, model and acceptance. */
    const unrecorded = new Map<string, string[][]>();
    const open = async (id: string, mode: "new" | "resume"): Promise<PreparedSession["run"]> => {
      const records = mode === "resume" ? await workspace.store.read(id) : [];
      const state = records.length > 0 ? SessionState.from(records) : undefined;
      if (state?.provider?.kind === "scripted" && values.script === undefined) {
        throw new UsageError(
          `session ${id} uses the scripted model "${String(state.provider.name)}"; pass it again with --script FILE`,
        );
      }
      const prepared = await prepareSession(config, {
        workspace,
        sessionId: id,
        records,
        interactive: true,
        approver,
        mcp: (line) => process.stderr.write(`${line}\n`),
        notify: stderrNotices,
      });
      for (const notice of prepared.run.setup.notices ?? [])
        process.stderr.write(`harness: note: ${escapeForTerminal(notice)}\n`);
      const run: PreparedSession["run"] = {
        ...prepared.run,
        mode,
        acceptToolChanges: values["accept-tool-changes"] === true,
      };
      const acceptance = prepared.acceptance;
      unrecorded.set(id, unrecordedFlags(values, acceptance));
      return run;
    };
    const first = await open(sessionId, existing ? "resume" : "new");
    const session = new EngineSession(first, existing, {
      catalog: new ConfiguredModels(first.setup.config, values.script !== undefined),
      opener: {
        resolve: (given) => byPrefix(workspace, given),
        open: (id) => open(id, "resume"),
        continueCommand: (id) => chatContinueCommand(id, workspace, unrecorded.get(id)),
      },
    });
    const show =
      values["quiet-calls"] === true || output.quiet
        ? undefined
        : // In line mode a running command's output lines were printed as they came: only diffs follow.
          callShow(workspace, () => session.sessionId, style, { output: terminal });
    return new ChatController(ui, session, style, {
      attachments: {
        root: workspace.root,
        fs: workspace.fs,
        // @path is decided by the policy of the session the chat is in at the time.
        permissions: { decide: (request) => session.permissions.decide(request) },
      },
      show,
      commands: first.setup.extensions,
    }).run();
  },
};
