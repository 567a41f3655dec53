import type { EngineListener } from "../engine/options.js";
import type { Provider } from "../providers/provider.js";
import type { ApprovalPort } from "../runtime/ports.js";
import { parseSessionConfig, type SessionConfig } from "./config.js";
import { ConfiguredModels } from "./configured-models.js";
import { EngineSession, type SessionHandle } from "./handle.js";
import type { SessionNotice } from "./notice.js";
import { prepareSession } from "./prepare.js";
import { validateSessionId } from "./session-id.js";
import { UsageError } from "./usage-error.js";
import { newSessionId, openWorkspace } from "./workspace.js";

/** What a library caller hears: every journal record, streamed model output, and notices. */
export interface SessionListener extends EngineListener {
  /** Warnings, notes and progress of the session's setup and record (the library prints nothing). */
  notice?(notice: SessionNotice): void;
}

/** Where and with whom a session runs, beside its configuration. */
export interface SessionOptions {
  /** The workspace directory (its `.harness/` holds the journal). */
  workspace: string;
  /** The model, when not one the configuration names (a profile, a provider, a script). */
  provider?: Provider;
  /**
   * Who answers `ask`. Given: the write and shell defaults are `ask`. None: every `ask` is
   * denied, and the defaults are `deny` (nobody is there to answer).
   */
  approver?: ApprovalPort;
  listener?: SessionListener;
  /** Aborting it cancels the running turn at its next safe point (the session is then cancelled). */
  signal?: AbortSignal;
  /** Environment the session's setup reads (API key variables, HARNESS_CONFIG); default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * A new session in `options.workspace`, set up from `config` as `harness run` sets one up (the
 * config files, profiles, rules, sandbox, hooks and MCP servers, below the configuration given
 * here). Nothing is journaled until its first turn, whose input is the session's goal.
 */
export async function createSession(
  config: SessionConfig,
  options: SessionOptions & { sessionId?: string },
): Promise<SessionHandle> {
  const sessionId = options.sessionId ?? newSessionId();
  validateSessionId(sessionId);
  return open(config, options, sessionId, "new");
}

/**
 * A recorded session of `options.workspace`, to run its next turns and operate on it: set up
 * from the options it recorded (what `config` gives beats them), its acceptance and its session
 * approvals kept. The next turn checks what a resume checks (trusted journal, same workspace,
 * policy, model and tools) before anything runs.
 */
export async function openSession(
  sessionId: string,
  options: SessionOptions & { config?: SessionConfig },
): Promise<SessionHandle> {
  validateSessionId(sessionId);
  return open(options.config ?? {}, options, sessionId, "existing");
}

async function open(
  given: SessionConfig,
  options: SessionOptions,
  sessionId: string,
  expect: "new" | "existing",
): Promise<EngineSession> {
  const config = parseSessionConfig(given);
  const listener = options.listener ?? {};
  const notify = (notice: SessionNotice) => listener.notice?.(notice);
  const workspace = await openWorkspace(options.workspace, { notify });
  // Decided before anything starts (the session's MCP servers): nothing to stop on a refusal.
  const exists = await workspace.store.exists(sessionId);
  if (expect === "new" && exists)
    throw new UsageError(
      `session ${sessionId} already exists in ${workspace.root}: open it with openSession`,
    );
  if (expect === "existing" && !exists) throw new UsageError(`no session ${sessionId} in ${workspace.root}`);
  const prepared = await prepareSession(config, {
    workspace,
    sessionId,
    interactive: options.approver !== undefined,
    ...(options.approver !== undefined ? { approver: options.approver } : {}),
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.env !== undefined ? { env: options.env } : {}),
    mcp: (line) => notify({ level: "progress", message: line }),
    notify,
  });
  for (const message of prepared.run.setup.notices ?? []) notify({ level: "note", message });
  // switchModel's catalog: the configured profiles (a scripted session has no other model).
  const catalog = new ConfiguredModels(prepared.run.setup.config, config.script !== undefined, options.env);
  return new EngineSession(prepared.run, prepared.records.length > 0, {
    listener,
    catalog,
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  });
}
