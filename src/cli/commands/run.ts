import { CommandCheck } from "../../engine/acceptance.js";
import type { PolicyHandle } from "../../engine/engine.js";
import { SessionState } from "../../engine/state.js";
import type { Provider } from "../../providers/provider.js";
import { ScriptedProvider } from "../../providers/scripted/provider.js";
import { ModePolicy, type WriteMode } from "../../runtime/mode-policy.js";
import type { ApprovalPort } from "../../runtime/ports.js";
import { ToolRegistry } from "../../runtime/registry.js";
import { createFileTools } from "../../tools/builtin.js";
import { oneOf, parse, positiveInt } from "../args.js";
import { runSession } from "../session-runner.js";
import { UsageError } from "../usage-error.js";
import { newSessionId, openWorkspace } from "../workspace.js";

const SESSION_OPTIONS = {
  workspace: { type: "string", short: "w" },
  script: { type: "string" },
  write: { type: "string" },
  "read-only": { type: "boolean" },
  accept: { type: "string", multiple: true },
  "accept-timeout": { type: "string" },
  "max-model-requests": { type: "string" },
  "max-tool-calls": { type: "string" },
  session: { type: "string" },
  json: { type: "boolean" },
  events: { type: "boolean" },
} as const;

const RUN_HELP = `Usage: harness run [options] GOAL

Run a model against a workspace. Every step is recorded under DIR/.harness/sessions/ID/.
The run is "verified" only when every --accept command exits 0 after the model finishes.

Options:
  --workspace, -w DIR        the workspace (default: the current directory)
  --script FILE              scripted model: a .json script or an .mjs module (offline)
  --write MODE               allow | ask | deny | propose (default: ask on a TTY, deny otherwise)
  --read-only                deny every write
  --accept CMD               acceptance command run in the workspace (repeatable)
  --accept-timeout MS        timeout per acceptance command (default 600000)
  --max-model-requests N     model request budget, retries included (default 50)
  --max-tool-calls N         tool call budget (default 200)
  --session ID               session id (an existing one is resumed if its task matches)
  --json                     print exactly one JSON summary object on stdout
  --events                   print journal events as NDJSON on stdout while running
  -h, --help                 show this help

Exit codes: 0 verified or unverified, 2 stopped, 3 review required, 130 cancelled,
1 internal error, 64 usage error.

Example:
  harness run --script replies.json --workspace ./repo --write allow --accept "npm test" "fix the failing test"`;

const RESUME_HELP = `Usage: harness resume SESSION [options]

Continue a recorded session: calls recorded but never started run without a new model
request; a call that started without a recorded outcome is marked unknown and the session
stops for review (nothing is run twice); a finished session re-runs its acceptance checks.
The workspace, goal, policy and model must be the ones the session was started with.

Options: the same as harness run (--workspace, --script, --write, --read-only, --accept,
--max-model-requests, --max-tool-calls, --json, --events). Policy flags and acceptance
commands default to the ones recorded when the session started.`;

type Parsed = ReturnType<typeof parse<typeof SESSION_OPTIONS>>;

export const runCommand = {
  summary: "run an agent on a goal in a workspace",
  help: RUN_HELP,
  async run(args: string[]): Promise<number> {
    const parsed = parse(args, SESSION_OPTIONS);
    const goal = parsed.positionals.join(" ").trim();
    const workspace = await openWorkspace(parsed.values.workspace);
    const sessionId = parsed.values.session ?? newSessionId();
    validateSessionId(sessionId);
    const existing = parsed.values.session !== undefined && (await workspace.backend.exists(sessionId));
    if (!existing && goal === "") throw new UsageError("a goal is required: harness run [options] GOAL");
    return startOrResume(
      parsed,
      workspace,
      sessionId,
      existing ? "resume" : "new",
      goal === "" ? undefined : goal,
    );
  },
};

export const resumeCommand = {
  summary: "continue a recorded session",
  help: RESUME_HELP,
  async run(args: string[]): Promise<number> {
    const parsed = parse(args, SESSION_OPTIONS);
    const [sessionId, ...extra] = parsed.positionals;
    if (!sessionId)
      throw new UsageError("which session? harness resume SESSION (list them with: harness sessions)");
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
    validateSessionId(sessionId);
    const workspace = await openWorkspace(parsed.values.workspace);
    if (!(await workspace.backend.exists(sessionId))) {
      throw new UsageError(
        `no session "${sessionId}" in ${workspace.root} (list them with: harness sessions)`,
      );
    }
    return startOrResume(parsed, workspace, sessionId, "resume", undefined);
  },
};

async function startOrResume(
  parsed: Parsed,
  workspace: Awaited<ReturnType<typeof openWorkspace>>,
  sessionId: string,
  mode: "new" | "resume",
  goal: string | undefined,
): Promise<number> {
  const values = parsed.values;
  if (values.json && values.events)
    throw new UsageError("--json and --events both write to stdout; choose one");
  const recorded =
    mode === "resume" ? SessionState.from(await workspace.backend.read(sessionId)).header : undefined;
  const provider = await loadProvider(values.script, recorded?.provider);
  const policy = buildPolicy(values, recorded?.policy);
  const acceptTimeout = positiveInt(values["accept-timeout"], "--accept-timeout") ?? 600_000;
  const commands = values.accept ?? recorded?.acceptance ?? [];
  const limits = {
    ...optional("maxModelRequests", positiveInt(values["max-model-requests"], "--max-model-requests")),
    ...optional("maxToolCalls", positiveInt(values["max-tool-calls"], "--max-tool-calls")),
  };
  const snapshot = new ToolRegistry();
  for (const tool of createFileTools()) snapshot.register(tool);
  return runSession({
    workspace,
    sessionId,
    mode,
    ...(goal !== undefined ? { goal } : {}),
    provider,
    snapshot: snapshot.snapshot(),
    policy: policy.handle,
    approver: policy.approver,
    acceptance: commands.map((command) => new CommandCheck(command, workspace.root, acceptTimeout)),
    limits,
    json: values.json === true,
    events: values.events === true,
  });
}

async function loadProvider(
  script: string | undefined,
  recorded: Record<string, unknown> | undefined,
): Promise<Provider> {
  if (script !== undefined) return ScriptedProvider.load(script);
  if (recorded?.kind === "scripted") {
    throw new UsageError(
      `this session uses the scripted model "${String(recorded.name)}"; pass it again with --script FILE`,
    );
  }
  throw new UsageError("no model configured: pass --script FILE (a scripted model; see README)");
}

function buildPolicy(values: Parsed["values"], recorded: Record<string, unknown> | undefined) {
  const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
  const recordedWrite = typeof recorded?.write === "string" ? (recorded.write as WriteMode) : undefined;
  const write: WriteMode =
    oneOf(values.write, "--write", ["allow", "ask", "deny", "propose"] as const) ??
    recordedWrite ??
    (interactive ? "ask" : "deny");
  if (write === "propose") {
    throw new UsageError(
      "--write propose is not supported yet (it is planned: proposals recorded for review and apply)",
    );
  }
  const readOnly =
    values["read-only"] === true || (values["read-only"] === undefined && recorded?.read_only === true);
  const modes = new ModePolicy(write, readOnly);
  const handle: PolicyHandle = { describe: modes.describe, digest: modes.digest, permissions: modes };
  const approver: ApprovalPort = {
    async request() {
      return {
        decision: "deny",
        scope: "once",
        by: "harness",
        reason: "no interactive approver is available",
      };
    },
  };
  return { handle, approver };
}

function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}

function validateSessionId(id: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(id)) {
    throw new UsageError(`invalid session id "${id}": use letters, digits, '.', '_' or '-' (at most 64)`);
  }
}
