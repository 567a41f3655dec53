import { existsSync } from "node:fs";
import { lstat, realpath } from "node:fs/promises";
import { join } from "node:path";
import { ErrorCode, RpcError } from "../api/errors.js";
import type { RunOptions } from "../api/methods.js";
import type { QuotaPort } from "../engine/quota-port.js";
import { SessionState } from "../engine/state.js";
import { describeOwner, inspectLockFile } from "../journal/lock.js";
import { sessionPaths } from "../journal/session-path.js";
import { checkSessionDir } from "../journal/state-dir.js";
import { verifyJournal } from "../journal/verify.js";
import type { SessionConfig } from "../session/config.js";
import { flagsOf } from "../session/config.js";
import { expandCommandLine } from "../session/extensions/commands.js";
import { EngineSession, type Turn } from "../session/handle.js";
import type { JournalSource } from "../session/journal-source.js";
import { type Notify, noticeLine } from "../session/notice.js";
import { forkWithArtifacts } from "../session/operations/fork.js";
import { prepareSession } from "../session/prepare.js";
import { effectiveFlags } from "../session/run-flags.js";
import { validateSessionId } from "../session/session-id.js";
import { UsageError } from "../session/usage-error.js";
import { newSessionId, type OpenedWorkspace, openWorkspace } from "../session/workspace.js";
import { thisProcess } from "../shared/process-owner.js";
import { TOOL_PROFILES, type ToolProfile, withoutOrphanProcessTools } from "../tools/profiles.js";
import { mayUseHost } from "./admission.js";
import { canSee, type IdentityPolicy } from "./identities.js";
import type {
  OpenedSession,
  OpenRequest,
  SessionRun as ServedRun,
  SessionFactory,
  SessionStore,
} from "./ports.js";
import { ownerOf } from "./stored.js";

export interface FactoryOptions {
  /** Each --workspace: where sessions at rest are listed and read by default (none: the current directory). */
  workspaces?: readonly string[];
  /** --database: sessions at rest are read from PostgreSQL instead. */
  database?: JournalSource;
  /**
   * A quota each identity's sessions share (`identity:NAME`): every model request of a session
   * reserves against the quota of the identity that opened it. None: no quota for anyone.
   */
  quotas?(identity: string): QuotaPort;
  log(line: string): void;
}

/**
 * How `harness serve` sets a session up: as `harness run` does (config, provider, tools,
 * policy, MCP servers), with the identity's catalog and rules applied, the wire approver, and
 * the owner recorded in session.started's setup so ownership survives a restart.
 */
export function serveSessionFactory(options: FactoryOptions): SessionFactory {
  return {
    open: (request) => openServed(request, options),
    async store(workspace) {
      if (workspace === undefined && options.database) return databaseStore(options.database);
      const dir = workspace ?? options.workspaces?.[0];
      if (dir === undefined) return undefined;
      // A client's workspace comes as the real path admission checked: opened exactly there.
      return workspaceStore(
        await openWorkspace(dir, { exact: workspace !== undefined, notify: logNotice(options) }),
      );
    },
    async served() {
      const stores: SessionStore[] = [];
      const dirs = options.workspaces?.length ? options.workspaces : [];
      for (const dir of dirs)
        stores.push(workspaceStore(await openWorkspace(dir, { notify: logNotice(options) })));
      // The directory serve was started in, when no --workspace names one: listed only when it
      // already holds harness state (serving never creates .harness where nothing ran).
      if (dirs.length === 0 && existsSync(join(process.cwd(), ".harness")))
        stores.push(workspaceStore(await openWorkspace(process.cwd(), { notify: logNotice(options) })));
      if (options.database) stores.push(databaseStore(options.database));
      return stores;
    },
  };
}

/** The session layer's notices in the server's log (an operator reads it; never a client). */
function logNotice(options: FactoryOptions): Notify {
  return (notice) => options.log(noticeLine(notice));
}

async function openServed(request: OpenRequest, options: FactoryOptions): Promise<OpenedSession> {
  // The real path admission checked, opened exactly there: a link the client named that was
  // flipped since, or a directory on the way swapped for one, opens nothing.
  const workspace = await openWorkspace(request.workspace, { exact: true, notify: logNotice(options) });
  const sessionId = request.sessionId ?? (await unusedSessionId(workspace));
  validateSessionId(sessionId);
  const records = (await workspace.store.exists(sessionId)) ? await workspace.store.read(sessionId) : [];
  const recorded = records.length > 0 ? SessionState.from(records).header : undefined;
  const owner = ownerOf(records);
  if (recorded && !canSee(request.identity, owner))
    throw new RpcError(ErrorCode.NotFound, `no session ${sessionId}`, { code: "SESSION_NOT_FOUND" });
  const opts = request.options;
  if (recorded?.provider.kind === "scripted" && request.script === undefined)
    throw new UsageError(
      `this session uses the scripted model "${String(recorded.provider.name)}": pass options.script again`,
    );
  const policy = request.identity.policy;
  const config = servedConfig(opts, policy, recorded?.options?.tools);
  // Answers come over the wire: write and shell default to ask, as on a terminal.
  const flags = effectiveFlags(flagsOf(config), recorded?.options, true);
  // A resumed session's recorded flags that make the host run or send more than a sandboxed
  // session does (a sandbox turned off, a provider URL or key variable) need host rights too.
  const hostFlag =
    flags.sandbox === "off"
      ? "it runs without the sandbox"
      : flags.baseUrl !== undefined || flags.apiKeyEnv !== undefined
        ? "its provider URL or key variable was set by its flags"
        : undefined;
  if (hostFlag !== undefined && !mayUseHost(request.identity))
    throw new RpcError(
      ErrorCode.Forbidden,
      `forbidden for identity ${request.identity.name}: this session was recorded so that ${hostFlag} (only an identity with "host": true may open it)`,
      { code: "IDENTITY_FORBIDDEN" },
    );
  const commands = config.accept ?? recorded?.acceptance ?? [];
  // Acceptance commands run on the host unsandboxed: a resumed session's recorded ones too.
  if (commands.length > 0 && !mayUseHost(request.identity))
    throw new RpcError(
      ErrorCode.Forbidden,
      `forbidden for identity ${request.identity.name}: this session runs acceptance commands on the host (only an identity with "host": true may)`,
      { code: "IDENTITY_FORBIDDEN" },
    );
  const log = (line: string) => options.log(`session ${sessionId}: ${line}`);
  const prepared = await prepareSession(
    { ...config, ...(request.script !== undefined ? { script: request.script.path } : {}) },
    {
      workspace,
      sessionId,
      records,
      interactive: true,
      ...(request.script !== undefined ? { scriptAs: request.script.code ? "code" : "data" } : {}),
      // A client without host rights chose this workspace: nothing in it becomes host code.
      workspaceCode: mayUseHost(request.identity),
      approver: request.approver(sessionId),
      mcp: log,
      notify: (notice) => log(noticeLine(notice)),
      // The identity that drives the session pays, whoever recorded it; its sub-agents too.
      ...(options.quotas ? { quota: options.quotas(request.identity.name) } : {}),
    },
  );
  const { setup } = prepared.run;
  for (const notice of setup.notices ?? []) log(`note: ${notice}`);
  // The owner is recorded in session.started's setup, so ownership survives a restart.
  const handle = new EngineSession(
    {
      ...prepared.run,
      owner: recorded ? owner : request.identity.name,
    },
    records.length > 0,
  );
  return {
    sessionId,
    workspace: workspace.root,
    store: workspace.store,
    records,
    // The first input of a session without records is its goal.
    // A leading `/NAME args` naming a loaded command template is expanded (the expanded text is
    // the recorded input, with command.expanded before it); one naming a template that is not
    // loaded (a project's not approved, changed, or broken) is refused, never sent as typed: the
    // person meant the template, and the model should not see the bare line instead. Anything
    // else is sent as typed.
    turn: (input, listener) => {
      const found = setup.extensions ? expandCommandLine(input, setup.extensions) : undefined;
      if (found?.kind === "refused")
        throw new RpcError(ErrorCode.InvalidParams, found.message, {
          code: "COMMAND_NOT_LOADED",
          command: found.name,
        });
      return atItsRoot(workspace.root, () => {
        if (found?.kind !== "expanded") return handle.turn(input, listener);
        return handle.turn(found.expanded.text, listener, { command: found.expanded.command });
      });
    },
    compact: (instructions, listener) =>
      atItsRoot(workspace.root, () => handle.compactTurn(instructions, listener)),
    close: () => handle.close(),
    refusedCommands: refusedCommands(setup.extensions),
  };
}

/** The loaded command table's refusals, by name (what turn() would throw for `/NAME`). */
function refusedCommands(
  extensions: Parameters<typeof expandCommandLine>[1] | undefined,
): Record<string, string> {
  const refused: Record<string, string> = {};
  for (const command of extensions?.commands ?? []) {
    const found = expandCommandLine(`/${command.name}`, extensions!);
    if (found.kind === "refused") refused[command.name] = found.message;
  }
  return refused;
}

/**
 * A run that starts only while the workspace is still where it was opened: a directory on its
 * path swapped for a link between turns would otherwise take the next turn's journal, writes and
 * sandbox bind elsewhere. Nothing is journaled when it moved (the journal is under the root).
 */
function atItsRoot(root: string, start: () => Turn): ServedRun {
  let turn: Turn | undefined;
  // An interrupt or steer that arrives between turn/start and the engine's start is kept for it,
  // not dropped: the turn starts only after the root is checked.
  let interrupted = false;
  const steers: string[] = [];
  return {
    run: async () => {
      const now = await realpath(root).catch(() => undefined);
      if (now !== root)
        throw new UsageError(
          `workspace ${root} moved or a directory on its path became a link since the session was opened; open it again with session/start`,
        );
      const current = start();
      turn = current;
      if (interrupted) current.interrupt();
      for (const text of steers.splice(0)) await current.steer(text);
      return current.done;
    },
    steer: async (text) => {
      if (turn === undefined) steers.push(text);
      else await turn.steer(text);
    },
    interrupt: () => {
      interrupted = true;
      turn?.interrupt();
    },
  };
}

/**
 * The server door's parser: a session/start's options as a SessionConfig, within the identity's
 * catalog and rules. `write` and `shell` take the run command's modes; `true`/`false` still mean
 * allow/deny, as clients written for the first protocol send them.
 */
export function servedConfig(
  opts: RunOptions,
  policy: IdentityPolicy,
  recordedTools: unknown,
): SessionConfig {
  const config: SessionConfig = {};
  if (opts.propose) config.write = "propose";
  else if (opts.write !== undefined) config.write = modeOf(opts.write);
  if (opts.shell !== undefined) config.shell = modeOf(opts.shell);
  if (opts.provider !== undefined) config.provider = opts.provider;
  if (opts.model !== undefined) config.model = opts.model;
  if (opts.base_url !== undefined) config.baseUrl = opts.base_url;
  if (opts.profile !== undefined) config.profile = opts.profile;
  if (opts.api_key_env !== undefined) config.apiKeyEnv = opts.api_key_env;
  if (opts.sandbox !== undefined) config.sandbox = opts.sandbox;
  // Only the client turns the network on; which hosts it reaches is still up to the rules below
  // (the identity's deny and ask rules join the client's, so a client cannot lift them).
  if (opts.network !== undefined) config.network = opts.network;
  if (opts.read_only === true) config.readOnly = true;
  if (opts.read_path !== undefined) config.readPaths = [...opts.read_path];
  if (opts.edit_path !== undefined) config.editPaths = [...opts.edit_path];
  if (opts.context_window !== undefined) config.contextWindow = opts.context_window;
  if (opts.request_deadline_ms !== undefined) config.requestDeadlineMs = opts.request_deadline_ms;
  const tools = catalogOf(
    opts.tools ?? (typeof recordedTools === "string" ? recordedTools : undefined),
    policy,
  );
  if (tools !== undefined) config.tools = tools;
  // The client's rules join the identity's: a deny or ask matching a call beats any allow
  // (policy/evaluation.ts), so a client's allow rule never lifts what its identity denies or asks.
  if (opts.allow?.length) config.allow = [...opts.allow];
  const deny = [...(opts.deny ?? []), ...(policy.deny ?? [])];
  const ask = [...(opts.ask ?? []), ...(policy.ask ?? [])];
  if (deny.length > 0) config.deny = deny;
  if (ask.length > 0) config.ask = ask;
  if (opts.accept !== undefined) config.accept = opts.accept;
  if (opts.until_accepted !== undefined) config.untilAccepted = opts.until_accepted;
  if (opts.no_progress !== undefined) config.noProgress = opts.no_progress;
  // Recorded with the session like the run command's flags: its children and its resume hold to them.
  const agents = {
    ...(opts.agents_depth !== undefined ? { depth: opts.agents_depth } : {}),
    ...(opts.agents_concurrent !== undefined ? { concurrent: opts.agents_concurrent } : {}),
    ...(opts.agents_max !== undefined ? { max: opts.agents_max } : {}),
  };
  if (Object.keys(agents).length > 0) config.agents = agents;
  config.limits = {
    ...(opts.max_model_requests ? { maxModelRequests: opts.max_model_requests } : {}),
    ...(opts.max_tool_calls ? { maxToolCalls: opts.max_tool_calls } : {}),
  };
  return config;
}

function modeOf<M extends string>(value: boolean | M): M | "allow" | "deny" {
  return value === true ? "allow" : value === false ? "deny" : value;
}

const BARE_TOOL = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * What an identity may not use it does not see: the requested tools cut to the identity's
 * catalog, minus every tool a bare deny rule of the identity names (the model is never offered it).
 */
export function catalogOf(requested: string | undefined, policy: IdentityPolicy): string | undefined {
  const hidden = new Set(
    (policy.deny ?? []).map((rule) => rule.trim()).filter((rule) => BARE_TOOL.test(rule)),
  );
  if (policy.tools === undefined && hidden.size === 0) return requested;
  const names = (selection: string): readonly string[] =>
    Object.hasOwn(TOOL_PROFILES, selection)
      ? TOOL_PROFILES[selection as ToolProfile]
      : selection
          .split(",")
          .map((name) => name.trim())
          .filter((name) => name.length > 0);
  let list = names(requested ?? "coding");
  if (policy.tools !== undefined) {
    const allowed = new Set(names(policy.tools));
    list = list.filter((name) => allowed.has(name));
  }
  list = withoutOrphanProcessTools(list.filter((name) => !hidden.has(name)));
  if (list.length === 0)
    throw new UsageError("this identity may use none of the tools asked for (options.tools)");
  return list.join(",");
}

function workspaceStore(workspace: OpenedWorkspace): SessionStore {
  return {
    store: workspace.store,
    workspace: workspace.root,
    async verify(sessionId) {
      const result = await verifyJournal(join(workspace.sessionDir(sessionId), "events.jsonl"));
      if (!result.ok)
        return { ok: false, records: result.validRecords, problems: [result.message], head: null };
      const trust = (await workspace.store.readReport(sessionId)).trust;
      return {
        ok: trust.trusted,
        records: result.records.length,
        problems: trust.trusted ? [] : [trust.message],
        head: result.records.at(-1)?.hash ?? null,
      };
    },
    async fork(parent, at) {
      const child = newSessionId();
      await forkWithArtifacts(workspace, parent, child, at);
      return child;
    },
    // The session's paths come from sessionPaths, which refuses an id that is not a directory
    // name; the state directory was checked for links when the workspace was opened.
    async lockHolder(sessionId) {
      const paths = sessionPaths(workspace.harnessDir, sessionId);
      // No link or special file in its directory before the lock file is read.
      checkSessionDir(workspace.harnessDir, paths.sessionDir);
      const status = inspectLockFile(paths.lock);
      if (status?.state !== "alive") return undefined;
      const self = thisProcess();
      if (status.owner.pid === self.pid && status.owner.host === self.host) return undefined;
      return describeOwner(status.owner);
    },
    async stamp(sessionId) {
      const paths = sessionPaths(workspace.harnessDir, sessionId);
      const events = await lstat(paths.events, { bigint: true }).catch(() => undefined);
      const lock = await lstat(paths.lock, { bigint: true }).catch(() => undefined);
      return [events?.ino, events?.size, events?.mtimeNs, events?.ctimeNs, lock?.ino, lock?.mtimeNs].join(
        ":",
      );
    },
  };
}

function databaseStore(source: JournalSource): SessionStore {
  return {
    store: source.store,
    async verify(sessionId) {
      const result = await source.verify(sessionId);
      if (!result.ok)
        return { ok: false, records: result.validRecords, problems: [result.message], head: null };
      return {
        ok: true,
        records: result.records.length,
        problems: [],
        head: result.records.at(-1)?.hash ?? null,
      };
    },
    async fork() {
      throw new UsageError(
        "sessions in a database are read-only through harness serve (fork them with harness fork)",
      );
    },
  };
}

/** A new session's id that no journal of the workspace has: a new start must never resume one. */
async function unusedSessionId(workspace: OpenedWorkspace): Promise<string> {
  for (;;) {
    const id = newSessionId();
    if (!(await workspace.store.exists(id))) return id;
  }
}
