import { resolve } from "node:path";
import { z } from "zod";
import type { TurnAttachments } from "../../engine/options.js";
import { SessionState } from "../../engine/state.js";
import { PROVIDER_KINDS } from "../../providers/config.js";
import type { SessionConfig } from "../../session/config.js";
import { expandCommandLine } from "../../session/extensions/commands.js";
import { readInputImage } from "../../session/extensions/input-image.js";
import { prepareSession } from "../../session/prepare.js";
import { flagWords, type RunFlags } from "../../session/run-flags.js";
import { validateSessionId } from "../../session/session-id.js";
import { UsageError } from "../../session/usage-error.js";
import { newSessionId, openWorkspace } from "../../session/workspace.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { traceMark } from "../../shared/trace-startup.js";
import { boundedInt, oneOf, parse, positiveInt, tokenCount } from "../args.js";
import { goalFrom } from "../goal-input.js";
import { latestSession } from "../latest-session.js";
import { stderrNotices } from "../notices.js";
import { offTerminalNotice } from "../off-terminal.js";
import { output } from "../output.js";
import { continuedOrNewSession, LAST_OPTION, sessionFromArgs } from "../session-id.js";
import { runSession } from "../session-runner.js";

export const SESSION_OPTIONS = {
  workspace: { type: "string", short: "w" },
  script: { type: "string" },
  provider: { type: "string" },
  model: { type: "string" },
  "base-url": { type: "string" },
  "api-key-env": { type: "string" },
  profile: { type: "string" },
  write: { type: "string" },
  "read-only": { type: "boolean" },
  shell: { type: "string" },
  sandbox: { type: "string" },
  network: { type: "string" },
  tools: { type: "string" },
  "defer-tools": { type: "string" },
  allow: { type: "string", multiple: true },
  ask: { type: "string", multiple: true },
  deny: { type: "string", multiple: true },
  "read-path": { type: "string", multiple: true },
  "edit-path": { type: "string", multiple: true },
  accept: { type: "string", multiple: true },
  "accept-timeout": { type: "string" },
  "max-model-requests": { type: "string" },
  "max-cost-usd": { type: "string" },
  "max-tool-calls": { type: "string" },
  "pool-size": { type: "string" },
  "context-window": { type: "string" },
  "request-deadline": { type: "string" },
  "agents-depth": { type: "string" },
  "agents-concurrent": { type: "string" },
  "agents-max": { type: "string" },
  "until-accepted": { type: "string" },
  "no-progress": { type: "string" },
  "accept-tool-changes": { type: "boolean" },
  session: { type: "string" },
  json: { type: "boolean" },
  events: { type: "boolean" },
} as const;

/** How much of each finished call a person watching sees (run, resume, chat): --quiet-calls hides diffs and output. */
export const SHOW_OPTIONS = { "quiet-calls": { type: "boolean" } } as const;

/** The help line of --quiet-calls (run, resume, chat). */
export const QUIET_CALLS_HELP = `  --quiet-calls              do not show each edit's diff and each command's output (its
                             first and last lines, secrets scrubbed) as calls finish;
                             the status line of each call stays (harness inspect SESSION
                             --call ID shows a call's whole result)`;

/** harness run's own: the session options plus --continue. */
const RUN_OPTIONS = {
  ...SESSION_OPTIONS,
  ...SHOW_OPTIONS,
  image: { type: "string", multiple: true },
  continue: { type: "boolean", short: "c" },
} as const;

const RUN_HELP = `Usage: harness run [options] GOAL
       harness run --continue [options] PROMPT
       harness run --session ID [options] PROMPT
       harness run [options] -          (the goal from stdin; also when stdin is piped and no GOAL is given)

Run a model against a workspace. Every step is recorded under DIR/.harness/sessions/ID/.
The run is "verified" only when every --accept command exits 0 after the model finishes.
Without --accept it ends "unverified", unless every change the model tried (a write, a command,
any tool that is not read-only) was denied: then it stops (changes_denied, exit 2) and names the
flag that allows them.
The model is sent AGENTS.md from the workspace root and from next to your user config
(each up to 32 KiB; nested AGENTS.md files once a call touches their directory), recorded in
the journal; a resume refuses when the root or user file changed (see docs/configuration.md).

Images: --image FILE (repeatable) attaches a PNG, JPEG, GIF or WebP file to the prompt (the goal,
or this turn's input), stored as an artifact and journaled by digest; at most 5 MB and 8000
pixels a side (refused, never resized). read_file returns images in the workspace the same way.
A model that takes no images (Chat Completions endpoints) reads a line naming each instead.

Model (one of):
  --script FILE              scripted model: a .json script or an .mjs module (offline)
  --provider NAME            openai-compatible | openai | anthropic | http-json, with --model ID
  --model ID                 the model id
  --base-url URL             API base URL (required for openai-compatible and http-json)
  --api-key-env VAR          environment variable holding the key (never pass keys as flags)
  --profile NAME             a named model profile from your config ("models" section)

Permissions:
  --write MODE               allow | ask | deny | propose (default: ask on a TTY, deny otherwise)
  --read-only                deny every write
  --shell MODE               allow | ask | deny for commands (default: ask on a TTY, deny otherwise)
  --allow RULE, --ask RULE, --deny RULE
                             permission rules such as 'read_file(src/**)', 'shell(npm test*)'
                             or 'mcp__github__*' (a '*' in a tool name matches any run of
                             characters; repeatable; deny wins over ask, ask over allow; see docs/permissions.md)
  --read-path PATH, --edit-path PATH
                             task scope: the only files that may be read / edited (repeatable;
                             an edit path must also be a read path; checked at every call)
  --sandbox PROFILE          workspace-write (default) | read-only | off, for shell commands;
                             read-only also binds acceptance commands and hooks, off turns
                             their sandbox off too (a resume may tighten it, never loosen it)
  --network MODE             off (default: commands have no network) | policy: shell calls,
                             acceptance commands and hooks defined with "network": true reach
                             only hosts 'net(HOST[:PORT])' rules allow
                             (e.g. --allow 'net(registry.npmjs.org:443)', 'net(*.pythonhosted.org)'),
                             through a proxy that journals every connection; needs the sandbox
                             (see docs/network.md)
  --tools SET                readonly | coding (default) | shell-only | files | name,name,...
                             MCP tools: coding all, readonly only read-only ones of trusted
                             servers, shell-only/files none; a list may name mcp__SERVER__TOOL
                             (with * patterns, e.g. mcp__github__*)
  --defer-tools MODE         auto (default) | always | never: with many tools (more than 30,
                             or definitions over 10% of the context window) the model gets
                             the built-ins and always_load tools plus tool_search, and loads
                             the others' definitions on demand; always defers, never sends all

MCP servers: those in your user config's "mcp_servers" (and a project's proposals you
approved with harness mcp approve) start before the first model request, with a progress
line each on stderr; their tools are offered as mcp__SERVER__TOOL and ask unless allowed
(--allow 'mcp__NAME__*'). A required server that cannot start stops the run with exit 2
before anything is recorded. See: harness mcp --help.

Run:
  --workspace, -w DIR        the workspace (default: the current directory)
  --accept CMD               acceptance command run in the workspace (repeatable)
  --accept-timeout MS        timeout per acceptance command (default 600000)
  --until-accepted N         goal loop: when the --accept checks fail, their failures (which
                             checks, exit codes, the end of their output) are the model's next
                             input and it goes on, up to N attempts in all (1-100; the turn's
                             budgets span every attempt; kept for resume)
  --no-progress K            end the goal loop after K attempts in a row that improved neither
                             the number of checks passing nor of failing tests (default 2)
  --max-model-requests N     model request budget, retries included (default 50)
  --max-cost-usd X           money budget in US dollars for the whole session (needs the profile's
                             prices): a request whose projected cost exceeds what is left is not sent
  --max-tool-calls N         tool call budget (default 200)
  --pool-size N              parallel tool calls per batch (default 8)
  --context-window TOKENS    tokens the model takes per request (default: the profile's
                             context_window, else the model's known window, else 32768);
                             a request estimated over it minus the reply reserve is never
                             sent: the run stops with context_exhausted
  --request-deadline MS      longest time one model request may take, stream included,
                             however the server keeps it alive (default: the profile's
                             request_deadline_ms, else 600000); past it the request fails
                             with TIMEOUT (retried within the retry budget), nothing runs
  --agents-depth N           how many levels of sub-agents (the agent tool) below this session
                             (default 1: its children cannot delegate; 0: no agent tool)
  --agents-concurrent N      children running at once (default 4; more calls wait their turn)
  --agents-max N             children per session (default 16; later calls are refused)
  --session ID               session id; an existing session (its id or a unique start of it)
                             takes PROMPT as its next turn
                             (the same identity checks as resume), or is resumed without one
  --continue, -c             the next turn of the workspace's latest session (latest activity);
                             without PROMPT, resume it
  --accept-tool-changes      resume even though the tools differ from those the session last
                             recorded (e.g. an MCP server changed its tool list); journaled
  --json                     print exactly one JSON summary object on stdout
  --events                   print journal events as NDJSON on stdout while running
                             (a sub-agent's records too, each with "agent": its label, a/b below it)
${QUIET_CALLS_HELP}
  -h, --help                 show this help

Progress goes to stderr: model text, a line per finished call, then an edit's diff and a
command's output; a failed --accept check prints its output. With -q (harness -q run ...) only
the status line and errors are printed.

Turns: a session is a sequence of turns. The goal is turn 1; each later PROMPT is sent after
everything the session holds (its earlier turns, their calls and results). A turn ends when the
model replies without calls (then --accept runs). Budgets (--max-model-requests,
--max-tool-calls) apply to each turn.
On a terminal, a line typed while the run works steers it (journaled at once, given to the model
at the next step); Ctrl-C interrupts the turn (exit 130; the "next" line is the command that
continues the session: run --session ID ... PROMPT), a second Ctrl-C exits at once. An approval
question takes one key: y once, s this exact call for the session, p a command's prefix for the
session (shown as the rule it adds, e.g. shell(npm test*)), n or Esc denies; other keys are
ignored. Off a terminal stdin is not read and Ctrl-C cancels the run.

Exit codes: 0 verified or unverified, 2 stopped (also: every change denied, or a required MCP
server could not start), 3 review required, 4 needs review
(proposals), 5 journal refused (locked, torn, tampered or not recorded by you; the message says
what to do), 130 cancelled (or a turn interrupted), 1 internal error, 64 usage error.

Example:
  harness run --script replies.json --workspace ./repo --write allow --accept "npm test" "fix the failing test"
  harness run --continue --workspace ./repo --script replies.json "now add a test for it"`;

const RESUME_HELP = `Usage: harness resume SESSION [options]

Continue a recorded session: calls recorded but never started run without a new model
request; a call that started without a recorded outcome is marked unknown and the session
stops for review (nothing is run twice); a finished session re-runs its acceptance checks.
The workspace, goal, policy and model must be the ones the session was started with, and
the root and user AGENTS.md the ones it recorded (restore them, or start a new session).

Only a journal you recorded (or adopted with harness journal adopt) is resumed: one recorded
under another journal key, or changed after it was written, is refused (exit 5) before anything
it recorded runs. A writer lock whose owner is provably gone (same host; the process is absent
or another process now has its pid) is taken over, with a printed line and a lock.recovered
record; a live owner, or one on another host, is never displaced (exit 5).

Options: the same as harness run (--workspace, --script, --write, --read-only, --accept, --until-accepted,
--max-model-requests, --max-tool-calls, --context-window, --request-deadline, --accept-tool-changes,
--json, --events, --quiet-calls). Policy flags, --context-window, --request-deadline and acceptance commands
default to the ones recorded when the session started.
--script, the budgets, --pool-size and --accept-timeout are not recorded: give them again (the
"next" command harness printed when the session stopped does).`;

export type Parsed = ReturnType<typeof parse<typeof SESSION_OPTIONS>>;

const RESUME_OPTIONS = { ...SESSION_OPTIONS, ...SHOW_OPTIONS, ...LAST_OPTION } as const;

export const runCommand = {
  help: RUN_HELP,
  options: RUN_OPTIONS,
  async run(args: string[]): Promise<number> {
    const parsed = parse(args, RUN_OPTIONS);
    const workspace = await openWorkspace(parsed.values.workspace, { notify: stderrNotices });
    if (parsed.values.continue && parsed.values.session !== undefined)
      throw new UsageError("--continue takes the latest session; --session names one: choose one");
    const latest = parsed.values.continue ? await latestSession(workspace) : undefined;
    if (parsed.values.continue && latest === undefined) {
      throw new UsageError(
        `no session to continue in ${workspace.root}; start one with: harness run --workspace ${workspace.root} [options] GOAL`,
      );
    }
    const named =
      parsed.values.session === undefined
        ? undefined
        : await continuedOrNewSession(workspace, parsed.values.session);
    const sessionId = latest ?? named?.sessionId ?? newSessionId();
    validateSessionId(sessionId);
    const existing = latest !== undefined || named?.existing === true;
    // Resuming with --session/--continue and no words takes no goal: stdin is read only for a new one or for '-'.
    const goal = existing && parsed.positionals.length === 0 ? "" : await goalFrom(parsed.positionals);
    if (!existing && goal === "")
      throw new UsageError(
        "a goal is required: harness run [options] GOAL, or pipe it in: ... | harness run [options] -",
      );
    const images = await Promise.all((parsed.values.image ?? []).map((file) => readInputImage(file)));
    if (images.length > 0 && goal === "")
      throw new UsageError(
        "--image attaches to a prompt: give one (harness run --session ID --image FILE PROMPT)",
      );
    return startOrResume(
      parsed,
      workspace,
      sessionId,
      existing ? "resume" : "new",
      goal === "" ? undefined : goal,
      undefined,
      {
        quietCalls: parsed.values["quiet-calls"] === true,
        ...(images.length > 0 ? { attachments: { images } } : {}),
      },
    );
  },
};

export const resumeCommand = {
  help: RESUME_HELP,
  options: RESUME_OPTIONS,
  async run(args: string[]): Promise<number> {
    const parsed = parse(args, RESUME_OPTIONS);
    const [given, ...extra] = parsed.positionals;
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
    const { workspace, sessionId } = await sessionFromArgs(
      parsed.values.workspace,
      given,
      parsed.values.last,
      "harness resume SESSION",
    );
    return startOrResume(parsed, workspace, sessionId, "resume", undefined, undefined, {
      quietCalls: parsed.values["quiet-calls"] === true,
    });
  },
};

/** Start or continue a session (or, with `compactOnly`, only compact a stopped one: harness compact). */
export async function startOrResume(
  parsed: Parsed,
  workspace: Awaited<ReturnType<typeof openWorkspace>>,
  sessionId: string,
  mode: "new" | "resume",
  goal: string | undefined,
  compactOnly?: { instructions?: string },
  display: { quietCalls?: boolean; attachments?: TurnAttachments } = {},
): Promise<number> {
  // A command-line session parses most schemas once (its config, its first records, a tool's
  // arguments): zod's compiled parsers cost more to generate than they save here, and their code
  // stays in memory. Same results, interpreted.
  z.config({ jitless: true });
  const values = parsed.values;
  if (values.json && values.events)
    throw new UsageError("--json and --events both write to stdout; choose one");
  const records = mode === "resume" ? await workspace.store.read(sessionId) : [];
  if (mode === "resume" && records.length === 0 && goal === undefined) {
    // Interrupted before its first record: there is no recorded goal to continue with.
    throw new UsageError(
      `session "${sessionId}" has no records (it was interrupted before it started); ` +
        `start it again with: harness run --session ${sessionId} [options] GOAL`,
    );
  }
  const state = records.length > 0 ? SessionState.from(records) : undefined;
  const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
  const config = argvConfig(values);
  // For an existing session the prompt is its next turn's input; only the session's own goal,
  // while it has one turn, still resumes it (as `run --session ID GOAL` did before turns).
  let input =
    goal !== undefined && state?.header !== undefined && !(goal === state.header.goal && state.turn <= 1)
      ? goal
      : undefined;
  if (state?.provider?.kind === "scripted" && values.script === undefined) {
    throw new UsageError(
      `this session uses the scripted model "${String(state.provider.name)}"; pass it again with --script FILE`,
    );
  }
  traceMark("run: preparing the session");
  const prepared = await prepareSession(config, {
    workspace,
    sessionId,
    records,
    interactive,
    mcp: (line) => process.stderr.write(`${line}\n`),
    notify: stderrNotices,
  });
  traceMark("run: session prepared");
  const { setup } = prepared.run;
  // `/NAME args` as the prompt: a command template, expanded (the expanded text is what is recorded).
  let attachments = display.attachments;
  const typed = input ?? (mode === "new" ? goal : undefined);
  const found =
    typed !== undefined && setup.extensions ? expandCommandLine(typed, setup.extensions) : undefined;
  if (found?.kind === "refused") throw new UsageError(found.message);
  if (found?.kind === "expanded") {
    attachments = { ...attachments, command: found.expanded.command };
    if (input !== undefined) input = found.expanded.text;
    else goal = found.expanded.text;
  }
  const commands = prepared.acceptance;
  const offTerminal = interactive ? undefined : offTerminalNotice(setup.policy.describe);
  const notices = output.quiet ? [] : [...(setup.notices ?? []), ...(offTerminal ? [offTerminal] : [])];
  for (const notice of notices) process.stderr.write(`harness: note: ${escapeForTerminal(notice)}\n`);
  return runSession({
    ...prepared.run,
    mode,
    ...(input !== undefined ? { input } : goal !== undefined ? { goal } : {}),
    ...(compactOnly !== undefined ? { compactOnly } : {}),
    ...(attachments !== undefined ? { attachments } : {}),
    json: values.json === true,
    events: values.events === true,
    showCalls: display.quietCalls !== true && compactOnly === undefined,
    acceptToolChanges: values["accept-tool-changes"] === true,
    rerunFlags: [...unrecordedFlags(values, commands), ...flagWords(setup.flags)],
    unrecordedFlags: unrecordedFlags(values, commands),
  });
}

/**
 * What any printed command for this session (a resume, its next turn) or a new run must give again because
 * the journal does not keep it for the next turn: the script, the budgets, the pool size, the
 * acceptance timeout (given now) and the acceptance commands in force (a later turn's own
 * --accept is not recorded). A new run also repeats the session's flags: it inherits none.
 */
export function unrecordedFlags(values: Parsed["values"], acceptance: readonly string[]): string[][] {
  const unrecorded: string[][] = [];
  if (values.script !== undefined) unrecorded.push(["--script", resolve(values.script)]);
  for (const name of ["max-model-requests", "max-tool-calls", "pool-size", "accept-timeout"] as const) {
    const value = values[name];
    if (value !== undefined) unrecorded.push([`--${name}`, value]);
  }
  for (const command of acceptance) unrecorded.push(["--accept", command]);
  return unrecorded;
}

/**
 * The command line's session configuration: its flags, the scripted model, the acceptance
 * commands and their timeout, and the budgets (the argv door's one parser).
 */
export function argvConfig(values: Parsed["values"]): SessionConfig {
  const limits = {
    ...optional("maxModelRequests", positiveInt(values["max-model-requests"], "--max-model-requests")),
    ...optional("maxToolCalls", positiveInt(values["max-tool-calls"], "--max-tool-calls")),
    ...optional("poolSize", positiveInt(values["pool-size"], "--pool-size")),
  };
  const acceptTimeout = positiveInt(values["accept-timeout"], "--accept-timeout");
  return {
    ...givenFlags(values),
    ...(values.script !== undefined ? { script: values.script } : {}),
    ...(values.accept !== undefined ? { accept: values.accept } : {}),
    ...(acceptTimeout !== undefined ? { acceptTimeoutMs: acceptTimeout } : {}),
    limits,
  };
}

export function givenFlags(values: Parsed["values"]): RunFlags {
  const flags: RunFlags = {};
  const write = oneOf(values.write, "--write", ["allow", "ask", "deny", "propose"] as const);
  const shell = oneOf(values.shell, "--shell", ["allow", "ask", "deny"] as const);
  const sandbox = oneOf(values.sandbox, "--sandbox", ["workspace-write", "read-only", "off"] as const);
  const provider = oneOf(values.provider, "--provider", PROVIDER_KINDS);
  if (write) flags.write = write;
  if (shell) flags.shell = shell;
  if (sandbox) flags.sandbox = sandbox;
  const network = oneOf(values.network, "--network", ["off", "policy"] as const);
  if (network) flags.network = network;
  if (provider) flags.provider = provider;
  if (values["read-only"]) flags.readOnly = true;
  if (values.allow) flags.allow = values.allow;
  if (values.ask) flags.ask = values.ask;
  if (values.deny) flags.deny = values.deny;
  if (values.tools) flags.tools = values.tools;
  const defer = oneOf(values["defer-tools"], "--defer-tools", ["auto", "always", "never"] as const);
  if (defer) flags.deferTools = defer;
  if (values["read-path"]) flags.readPaths = values["read-path"];
  if (values["edit-path"]) flags.editPaths = values["edit-path"];
  if (values.model) flags.model = values.model;
  if (values["base-url"]) flags.baseUrl = values["base-url"];
  if (values["api-key-env"]) flags.apiKeyEnv = values["api-key-env"];
  if (values.profile) flags.profile = values.profile;
  const contextWindow = tokenCount(values["context-window"], "--context-window");
  if (contextWindow !== undefined) flags.contextWindow = contextWindow;
  const deadline = positiveInt(values["request-deadline"], "--request-deadline");
  if (deadline !== undefined) flags.requestDeadlineMs = deadline;
  const agents = {
    ...optional("depth", boundedInt(values["agents-depth"], "--agents-depth", 0, 8)),
    ...optional("concurrent", boundedInt(values["agents-concurrent"], "--agents-concurrent", 1, 64)),
    ...optional("max", boundedInt(values["agents-max"], "--agents-max", 1, 1024)),
  };
  if (Object.keys(agents).length > 0) flags.agents = agents;
  const untilAccepted = boundedInt(values["until-accepted"], "--until-accepted", 1, 100);
  if (untilAccepted !== undefined) flags.untilAccepted = untilAccepted;
  const maxCost = values["max-cost-usd"];
  if (maxCost !== undefined) {
    const usd = Number(maxCost);
    if (maxCost.trim() === "" || !Number.isFinite(usd) || usd <= 0)
      throw new UsageError(`--max-cost-usd must be a positive number of dollars, not "${maxCost}"`);
    flags.maxCostUsd = usd;
  }
  const noProgress = boundedInt(values["no-progress"], "--no-progress", 1, 100);
  if (noProgress !== undefined) flags.noProgress = noProgress;
  return flags;
}

function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}
