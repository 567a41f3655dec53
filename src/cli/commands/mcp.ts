import { defaultProfile } from "../../config/sections.js";
import type { EngineListener } from "../../engine/options.js";
import { isLoopback, originOf } from "../../mcp-server/http-guard.js";
import { DEFAULT_SESSION_LIMITS } from "../../mcp-server/http-limits.js";
import { runToolApprover } from "../../mcp-server/run-tool.js";
import { ServedSession } from "../../mcp-server/served-session.js";
import { MAX_CONTEXT_TOKENS } from "../../providers/context-window.js";
import type { SessionConfig } from "../../session/config.js";
import { loadConfigForCli } from "../../session/governance.js";
import { EngineSession } from "../../session/handle.js";
import { prepareSession } from "../../session/prepare.js";
import type { RunFlags } from "../../session/run-flags.js";
import type { RunSetup } from "../../session/setup.js";
import { unaskedShellRefusal } from "../../session/unasked-checks.js";
import { UsageError } from "../../session/usage-error.js";
import { harnessVersion } from "../../session/version.js";
import { newSessionId, type OpenedWorkspace, openWorkspace } from "../../session/workspace.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { parse, positiveInt } from "../args.js";
import { ADD_HELP, APPROVE_HELP, LIST_HELP, REMOVE_HELP, TEST_HELP } from "../mcp-help.js";
import { stderrNotices } from "../notices.js";
import { argvConfig, givenFlags, SESSION_OPTIONS } from "./run.js";

const SERVE_OPTIONS = {
  workspace: SESSION_OPTIONS.workspace,
  write: SESSION_OPTIONS.write,
  "read-only": SESSION_OPTIONS["read-only"],
  shell: SESSION_OPTIONS.shell,
  sandbox: SESSION_OPTIONS.sandbox,
  tools: SESSION_OPTIONS.tools,
  allow: SESSION_OPTIONS.allow,
  ask: SESSION_OPTIONS.ask,
  deny: SESSION_OPTIONS.deny,
  "read-path": SESSION_OPTIONS["read-path"],
  "edit-path": SESSION_OPTIONS["edit-path"],
  script: SESSION_OPTIONS.script,
  provider: SESSION_OPTIONS.provider,
  model: SESSION_OPTIONS.model,
  "base-url": SESSION_OPTIONS["base-url"],
  "api-key-env": SESSION_OPTIONS["api-key-env"],
  profile: SESSION_OPTIONS.profile,
  "accept-timeout": SESSION_OPTIONS["accept-timeout"],
  http: { type: "string" },
  "token-env": { type: "string" },
  "allow-remote": { type: "boolean" },
  "allow-host": { type: "string", multiple: true },
  "allow-origin": { type: "string", multiple: true },
  "max-clients": { type: "string" },
  "client-idle-timeout": { type: "string" },
} as const;

const HELP = `Usage: harness mcp <subcommand> [options]

Subcommands:
  add NAME -- COMMAND ARGS...
             add your own server to your user config (or NAME --url URL)
  remove NAME
             remove one of your servers from your user config
  list       the MCP servers your config defines and the project proposes (not started)
  test NAME  start one server, list its tools as the model would see them, stop it
  approve NAME
             approve the exact definition of a server the project proposes
  serve      serve harness's governed tools to an MCP client (stdio, or Streamable HTTP)

Your MCP servers (user config "mcp_servers") start with every harness run and resume;
their tools are offered as mcp__SERVER__TOOL, governed like built-in tools.

${ADD_HELP}

${REMOVE_HELP}

${LIST_HELP}

${TEST_HELP}

${APPROVE_HELP}

harness mcp serve --workspace DIR [options]

Any MCP client (an IDE, another agent) gets harness's tools: read_file, edit_file,
write_file, glob, grep, shell, read_artifact, each marked with MCP tool annotations
(readOnlyHint, destructiveHint, idempotentHint, openWorldHint) from its effect class. Every call
is validated, decided by the policy, sandboxed and journaled in a session of its own
(DIR/.harness/sessions/ID, goal "mcp serve"), exactly like an agent's call. The session is
opened at the client's first tool call: a client that connects, lists and leaves leaves nothing. When the policy says ask, the client is asked
through an elicitation; a client that declared no elicitation capability, declines or
cancels gets the call denied. read_file returns the file's version; pass it as
expected_version to edit_file/write_file (a stale one is a STALE_VERSION error result).
Also: harness_run (a whole agent session with acceptance checks, with progress
notifications), and as resources (harness://sessions/ID/events.jsonl) the journals of the
sessions this client started: its own session and its harness_run sessions, never another
client's or an earlier process's. A journal holding a call the policy now denies, or naming a
file read_file may not read without asking, is withheld whole (a cut journal would not verify).

Permissions (as harness run; write and shell default to ask: the client is asked):
  --write MODE               allow | ask | deny | propose
  --read-only                deny every write
  --shell MODE               allow | ask | deny for commands
  --allow RULE, --ask RULE, --deny RULE
                             permission rules such as 'read_file(src/**)' (repeatable)
  --read-path PATH, --edit-path PATH
                             task scope (repeatable)
  --sandbox PROFILE          workspace-write (default) | read-only | off, for shell commands
  --tools SET                readonly | coding (default) | shell-only | files | name,name,...

The model harness_run uses (default: your user config's default_profile; without any,
harness_run answers with an error):
  --script FILE | --provider NAME --model ID [--base-url URL] [--api-key-env VAR] | --profile NAME
  --accept-timeout MS        timeout per acceptance command of harness_run (default 600000)
  harness_run sessions have no one to ask: their asks are denied.

Transport (default: stdio, the JSON-RPC stream on stdin/stdout; logs on stderr):
  --http HOST:PORT           Streamable HTTP at http://HOST:PORT/ instead (port 0: any free port)
  --token-env VAR            the environment variable holding the bearer token every HTTP
                             request must carry (required with --http; never pass tokens as flags)
  --allow-remote             listen on a HOST that is not loopback (off by default)
  --allow-host NAME[:PORT]   also answer requests whose Host header is NAME (repeatable); by
                             default only HOST:PORT itself (and localhost, 127.0.0.1, [::1]
                             when HOST is loopback): other Host values get 403 (DNS rebinding);
                             with --allow-remote, name here the addresses clients use
  --allow-origin ORIGIN      also answer browser requests from ORIGIN, e.g. http://localhost:6274
                             (repeatable); a request with any other Origin header gets 403
  --max-clients N            2025-era client sessions open at once (default 16; more: 503)
  --client-idle-timeout MS   end a client session idle this long (default 1800000)

  Over HTTP a 2025-era client (initialize, then Mcp-Session-Id) gets a session of its own:
  what it declared at initialize holds for all its requests, so approvals are asked by
  elicitation on the call's stream, and notifications/cancelled stops the call (its process
  tree is killed). DELETE with its Mcp-Session-Id ends it: calls still running are cancelled.
  Clients of the stateless 2026-07-28 generation carry no identity between requests and share
  one session, the server's (its id is printed when their first call opens it).

  --workspace, -w DIR        the workspace (default: the current directory)
  -h, --help                 show this help

The server runs until the client disconnects (stdio) or it gets SIGINT/SIGTERM; the session
then ends. Exit codes: 0 stopped cleanly, 64 usage error, 5 journal refused, 1 internal error.

Example (a client configuration):
  {"command": "harness", "args": ["mcp", "serve", "--workspace", "/path/to/repo", "--write", "ask"]}`;

/** Model flags belong to harness_run; the served session's "model" is the client. */
const MODEL_KEYS = ["provider", "model", "baseUrl", "apiKeyEnv", "profile"] as const;

const SUBCOMMAND_HELP: Readonly<Record<string, string>> = {
  list: LIST_HELP,
  test: TEST_HELP,
  approve: APPROVE_HELP,
  add: ADD_HELP,
  remove: REMOVE_HELP,
};

export const mcpCommand = {
  help: HELP,
  helpFor: (args: readonly string[]): string | undefined =>
    args[0] === undefined ? undefined : SUBCOMMAND_HELP[args[0]],
  async run(args: string[]): Promise<number> {
    const [sub, ...rest] = args;
    if (sub === "serve") return serve(rest);
    if (sub === "add" || sub === "remove") {
      const edit = await import("../mcp-config-edit.js");
      return sub === "add" ? edit.mcpAdd(rest) : edit.mcpRemove(rest);
    }
    const admin = await import("../mcp-admin.js");
    if (sub === "list") return admin.mcpList(rest);
    if (sub === "test") return admin.mcpTest(rest);
    if (sub === "approve") return admin.mcpApprove(rest);
    throw new UsageError(
      sub === undefined
        ? "which subcommand? harness mcp add | remove | list | test | approve | serve"
        : `unknown subcommand "${escapeForTerminal(sub)}" (available: add, remove, list, test, approve, serve)`,
    );
  },
};

async function serve(args: string[]): Promise<number> {
  const parsed = parse(args, SERVE_OPTIONS);
  const values = parsed.values;
  if (parsed.positionals.length > 0)
    throw new UsageError(`unexpected arguments: ${parsed.positionals.join(" ")}`);
  const http = httpOption(values.http, values["token-env"], values["allow-remote"] === true);
  const httpExtras = httpClientOptions(values, http !== undefined);
  const workspace = await openWorkspace(values.workspace, { notify: stderrNotices });
  const given = givenFlags(values);
  const config = await loadConfigForCli(workspace.root);
  // harness_run's model: the flags, else the user's default_profile (harness init writes it).
  const hasModel =
    values.script !== undefined ||
    given.provider !== undefined ||
    given.profile !== undefined ||
    defaultProfile(config) !== undefined;

  const served: RunFlags = { ...given };
  for (const key of MODEL_KEYS) delete served[key];
  // Built now, so a bad flag or config fails the start; its session is opened at the first call.
  let first: PreparedSession | undefined = await prepareServedSession(workspace, served, true);
  const { setup } = first;
  process.stderr.write(
    `harness mcp serve: serving ${workspace.root}; a session is recorded from a client's first tool call\n`,
  );
  const commandsSandboxed = setup.environment?.sandbox !== undefined && setup.environment.sandbox !== "none";

  const { serveMcp } = await import("../../mcp-server/serve.js");
  const { annotationsFor } = await import("../../mcp-server/annotations.js");
  return serveMcp({
    openSession: async () => {
      const prepared = first ?? (await prepareServedSession(workspace, served, false));
      first = undefined;
      return startServedSession(workspace, prepared);
    },
    tools: setup.snapshot.specs.map((spec) => {
      const tool = setup.snapshot.get(spec.name)?.tool;
      return tool
        ? { ...spec, annotations: annotationsFor(tool.effect, tool.idempotency, { commandsSandboxed }) }
        : spec;
    }),
    harnessDir: workspace.harnessDir,
    permissions: setup.policy.permissions,
    version: harnessVersion(),
    ...(hasModel ? { run: runStarter(workspace, argvConfig(values)) } : {}),
    ...(http ? { http: { ...http, ...httpExtras } } : {}),
    log: (line) => process.stderr.write(`harness mcp serve: ${escapeForTerminal(line)}\n`),
  });
}

/** A served session built (its setup from the flags and config) but not yet started. */
interface PreparedSession {
  session: ServedSession;
  setup: RunSetup;
}

/**
 * A served session (goal "mcp serve"): an engine whose model is the client, recorded in a
 * journal of its own once started. The server opens one at a client's first call; over HTTP each
 * 2025-era client gets its own.
 */
async function prepareServedSession(
  workspace: OpenedWorkspace,
  config: SessionConfig,
  notices: boolean,
): Promise<PreparedSession> {
  const session = new ServedSession(newSessionId());
  // The client can be asked, so what no flag or config decides is asked, not denied.
  const { setup } =
    // The client is the model here: it has no children to delegate to (no agent tool).
    (
      await prepareSession(
        { ...config, agents: { depth: 0 } },
        {
          workspace,
          sessionId: session.sessionId,
          interactive: true,
          provider: session.model,
          approver: session.approver,
          notify: stderrNotices,
        },
      )
    ).run;
  if (notices)
    for (const notice of setup.notices) process.stderr.write(`harness: note: ${escapeForTerminal(notice)}\n`);
  return { session, setup };
}

async function startServedSession(
  workspace: OpenedWorkspace,
  { session, setup }: PreparedSession,
): Promise<ServedSession> {
  const sessionId = session.sessionId;
  // Without instructions: nobody reads a system message here, so no AGENTS.md is loaded. Nothing
  // is deferred either: the client lists every governed tool itself (tools/list) and calls them.
  const { instructions: _unused, deferTools: _listed, ...servingSetup } = setup;
  await session.start(
    (_model, listener, signal) =>
      new EngineSession(
        {
          workspace,
          sessionId,
          mode: "new",
          setup: servingSetup,
          acceptance: [],
          limits: {
            maxModelRequests: Number.MAX_SAFE_INTEGER,
            maxToolCalls: Number.MAX_SAFE_INTEGER,
            contextWindowTokens: MAX_CONTEXT_TOKENS,
            replyReserveTokens: 1,
          },
          // A client's notifications/cancelled stops its one call (served-session.ts).
          callSignal: session.callSignal,
        },
        false,
        { signal, listener },
      ).turn("mcp serve").done,
  );
  // A refused journal or a bad setup reaches the client as the call's error, and the operator's log.
  if (session.failure !== undefined) throw session.failure;
  if (session.stopped) throw new Error(session.stopped);
  return session;
}

/** harness_run: a new session per call, built like harness run's (no one to ask: asks deny, saying why). */
function runStarter(workspace: OpenedWorkspace, config: SessionConfig) {
  return async (
    request: { goal: string; accept: string[] },
    listener: EngineListener,
    signal: AbortSignal,
  ) => {
    const prepared = await prepareSession(
      { ...config, accept: request.accept },
      { workspace, sessionId: newSessionId(), interactive: false, approver: runToolApprover },
    );
    try {
      await refuseUnallowedChecks(request.accept, prepared.run.setup);
      return await new EngineSession(prepared.run, false, { signal, listener }).turn(request.goal).done;
    } finally {
      // The session ends with its call: so does its network namespace.
      await prepared.run.setup.sessionNetwork?.close();
    }
  };
}

/**
 * Acceptance commands run on the host. From `harness run` they are the user's own; through
 * harness_run they are the client's, so each must be one the server's policy would let the
 * shell tool run without asking (an `ask` has no one to answer in a harness_run session).
 */
async function refuseUnallowedChecks(commands: readonly string[], setup: RunSetup): Promise<void> {
  const session = { permissions: setup.policy.permissions, tools: setup.snapshot.names };
  for (const command of commands) {
    const why = await unaskedShellRefusal(command, session);
    if (why !== undefined)
      throw new Error(
        `acceptance command ${JSON.stringify(command)} is not allowed by the server's shell policy (${why}); ` +
          "the server's operator can allow it with --shell allow or an --allow 'shell(...)' rule",
      );
  }
}

/** Who may reach the HTTP server besides its own address, and how many clients it keeps. */
function httpClientOptions(
  values: {
    "allow-host"?: string[] | undefined;
    "allow-origin"?: string[] | undefined;
    "max-clients"?: string | undefined;
    "client-idle-timeout"?: string | undefined;
  },
  isHttp: boolean,
): {
  allowedHosts?: string[];
  allowedOrigins?: string[];
  limits?: { max: number; idleMs: number };
} {
  const given = (["allow-host", "allow-origin", "max-clients", "client-idle-timeout"] as const).filter(
    (flag) => values[flag] !== undefined,
  );
  if (!isHttp) {
    if (given.length > 0) throw new UsageError(`--${given[0]} is for --http HOST:PORT`);
    return {};
  }
  for (const host of values["allow-host"] ?? []) {
    if (!/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$/.test(host))
      throw new UsageError(`--allow-host must be a host name or NAME:PORT, got "${escapeForTerminal(host)}"`);
  }
  for (const origin of values["allow-origin"] ?? []) {
    if (originOf(origin) === undefined)
      throw new UsageError(
        `--allow-origin must be an origin such as http://localhost:6274, got "${escapeForTerminal(origin)}"`,
      );
  }
  const max = positiveInt(values["max-clients"], "--max-clients") ?? DEFAULT_SESSION_LIMITS.max;
  const idleMs =
    positiveInt(values["client-idle-timeout"], "--client-idle-timeout") ?? DEFAULT_SESSION_LIMITS.idleMs;
  return {
    ...(values["allow-host"] ? { allowedHosts: values["allow-host"] } : {}),
    ...(values["allow-origin"] ? { allowedOrigins: values["allow-origin"] } : {}),
    limits: { max, idleMs },
  };
}

function httpOption(
  value: string | undefined,
  tokenEnv: string | undefined,
  allowRemote: boolean,
): { host: string; port: number; token: string; allowRemote: boolean } | undefined {
  if (value === undefined) {
    if (tokenEnv !== undefined) throw new UsageError("--token-env is for --http HOST:PORT");
    return undefined;
  }
  const match = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match?.[1] || port > 65535)
    throw new UsageError(`--http must be HOST:PORT (e.g. 127.0.0.1:8765), got "${value}"`);
  const host = match[1].replace(/^\[|\]$/g, "");
  if (!isLoopback(host) && !allowRemote) {
    throw new UsageError(
      `--http ${host} is not a loopback address: other machines could reach the server; pass --allow-remote if that is meant`,
    );
  }
  if (tokenEnv === undefined)
    throw new UsageError(
      "--http needs --token-env VAR: the variable holding the bearer token clients must send",
    );
  const token = process.env[tokenEnv];
  if (token === undefined || token.length < 16) {
    throw new UsageError(
      `the environment variable ${tokenEnv} must hold the bearer token (at least 16 characters); it is ${token === undefined ? "not set" : "too short"}`,
    );
  }
  return { host, port, token, allowRemote };
}
