import { Readable, Writable } from "node:stream";
import { ndJsonStream } from "@agentclientprotocol/sdk";
import { acpAgent } from "../../acp/agent.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { parse } from "../args.js";
import { argvConfig, SESSION_OPTIONS } from "./run.js";

const { json: _json, events: _events, session: _session, ...ACP_FLAGS } = SESSION_OPTIONS;
const ACP_OPTIONS = ACP_FLAGS;

const HELP = `Usage: harness acp [--workspace DIR] [run options]

Speak the Agent Client Protocol (ACP) on stdin/stdout, for an editor (Zed, JetBrains, Neovim...)
that starts harness as its agent. Logging goes to stderr only; stdout is the protocol.

Every ACP session is an ordinary harness session whose id is the ACP sessionId: harness
sessions, inspect, report, undo and audit work on it. A prompt is a turn; each ask becomes a
permission request carrying the call's tool, arguments and, for an edit or write, the file's
whole old and new text; its answer is bound to that call's digest and journaled. session/load
replays the history from the verified journal and refuses one that does not verify.

Session modes are the write modes read-only, propose, ask and allow, never looser than your
configuration (journaled as mode.switched). Commands: /undo, /diff, /compact, /fork, /model.
Files and commands stay harness's: the editor's fs and terminal capabilities are not used
(see docs/acp.md).

Options: those of harness run (--profile, --provider, --model, --script, --write, --shell,
--sandbox, --accept, limits...), except --json, --events and --session; they apply to every
session the editor opens.
  --workspace DIR            only sessions in DIR may be opened (default: the editor's cwd)

Configure an editor: docs/acp.md. Exit codes: 0 when the editor closes stdin; 64 usage error.`;

export const acpCommand = {
  help: HELP,
  options: ACP_OPTIONS,
  async run(args: string[]): Promise<number> {
    const parsed = parse(args, ACP_OPTIONS);
    const values = parsed.values;
    const config = argvConfig({ ...values });
    const log = (line: string) => process.stderr.write(`harness acp: ${escapeForTerminal(line)}\n`);
    const app = acpAgent({
      config,
      ...(values.workspace !== undefined ? { workspace: values.workspace } : {}),
      log,
    });
    const stream = ndJsonStream(
      Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
      Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
    );
    const connection = app.connect(stream);
    await connection.closed;
    return 0;
  },
};
