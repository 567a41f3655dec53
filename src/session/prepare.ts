import type { Limits } from "../engine/options.js";
import type { QuotaPort } from "../engine/quota-port.js";
import { SessionState } from "../engine/state.js";
import type { JournalStore } from "../journal/store.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import type { McpServerDefinition } from "../mcp/config.js";
import type { ModelPrices } from "../providers/config.js";
import type { Provider } from "../providers/provider.js";
import type { ApprovalPort } from "../runtime/ports.js";
import { isLooser, profileOf } from "../sandbox/profiles.js";
import { DEFAULT_ACCEPT_TIMEOUT_MS, flagsOf, parseSessionConfig, type SessionConfig } from "./config.js";
import type { SessionRun } from "./engine-options.js";
import type { McpServers } from "./mcp-servers.js";
import { IGNORE_NOTICES, type Notify } from "./notice.js";
import { effectiveFlags, type SandboxFlag } from "./run-flags.js";
import { buildSetup, type RunSetup } from "./setup.js";
import { UsageError } from "./usage-error.js";
import type { OpenedWorkspace } from "./workspace.js";

/** What a door adds to a configuration: where, which session, who answers, what may run on the host. */
export interface DoorContext {
  workspace: OpenedWorkspace;
  sessionId: string;
  /** The journal, when not the workspace's own (a fleet worker's, under its lease). */
  store?: JournalStore;
  /** The session's records when the door already read them (read here otherwise). */
  records?: readonly AnyRecord[];
  /**
   * Whether someone can answer `ask` (a terminal, a client over the wire, an editor): the write
   * and shell defaults below the config files are then `ask`, else `deny`.
   */
  interactive: boolean;
  /** Who answers `ask` (none: the terminal when interactive, otherwise every ask is denied). */
  approver?: ApprovalPort;
  /** Where calls come from instead of a configured model (harness mcp serve, a library caller's model). */
  provider?: Provider;
  /** The given provider's prices (a child on its parent's model): what a money budget is priced at. */
  providerPrices?: ModelPrices;
  /** `data`: the script is read as JSON only, whatever its name (a server client without host rights named it). */
  scriptAs?: "code" | "data";
  /** Whether code the workspace brings may run on the host (setup.ts `workspaceCode`). */
  workspaceCode?: boolean;
  /**
   * Start the user's MCP servers (every door that runs turns), with their start-up progress as
   * lines already laid out for a terminal (escaped, one per server and phase).
   */
  mcp?: (line: string) => void;
  /** A sub-agent's: its parent's started MCP servers, shared, never started again (setup.ts `sharedMcp`). */
  sharedMcp?: McpServers;
  /** MCP servers the person chose in their editor (setup.ts `editorServers`). */
  editorServers?: Readonly<Record<string, McpServerDefinition>>;
  env?: NodeJS.ProcessEnv;
  notify?: Notify;
  /**
   * A quota shared with other sessions (a fleet queue's, a server identity's): every model request
   * of the session and of its sub-agents, at any depth, reserves against it (EngineOptions.quota).
   */
  quota?: QuotaPort;
}

/** A session ready to run, and what its door needs to say about it. */
export interface PreparedSession {
  run: SessionRun & { setup: RunSetup };
  /** The session's records so far ([] for a new one). */
  records: readonly AnyRecord[];
  /** The acceptance commands in force (given now, else recorded). */
  acceptance: readonly string[];
}

/**
 * Build a session from its configuration and its door's context: the one place a session is
 * set up, for a new one and for a recorded one (whose recorded options fill in what the
 * configuration leaves out, and whose recorded acceptance applies unless new commands are given).
 */
export async function prepareSession(given: SessionConfig, door: DoorContext): Promise<PreparedSession> {
  // Every door's configuration is checked by the one schema here, whatever its parser let through.
  const config = parseSessionConfig(given);
  const { workspace, sessionId } = door;
  const notify = door.notify ?? IGNORE_NOTICES;
  const store = door.store ?? workspace.store;
  const records = door.records ?? ((await store.exists(sessionId)) ? await store.read(sessionId) : []);
  const state = records.length > 0 ? SessionState.from(records) : undefined;
  if (state?.provider?.kind === "scripted" && config.script === undefined && door.provider === undefined)
    throw new UsageError(
      `session ${sessionId} uses the scripted model "${String(state.provider.name)}"; give its script again (script)`,
    );
  if (state?.header !== undefined) refuseLooserSandbox(config.sandbox, state.options?.sandbox);
  const flags = effectiveFlags(flagsOf(config), state?.options, door.interactive);
  const setup = await buildSetup({
    workspace,
    flags,
    ...(config.script !== undefined ? { script: config.script } : {}),
    ...(door.scriptAs !== undefined ? { scriptAs: door.scriptAs } : {}),
    ...(door.workspaceCode !== undefined ? { workspaceCode: door.workspaceCode } : {}),
    interactive: door.interactive,
    ...(door.env !== undefined ? { env: door.env } : {}),
    ...(door.provider !== undefined ? { provider: door.provider } : {}),
    ...(door.providerPrices !== undefined ? { providerPrices: door.providerPrices } : {}),
    ...(door.approver !== undefined ? { approver: door.approver } : {}),
    ...(door.mcp !== undefined ? { mcp: door.mcp } : {}),
    ...(door.sharedMcp !== undefined ? { sharedMcp: door.sharedMcp } : {}),
    ...(door.editorServers !== undefined ? { editorServers: door.editorServers } : {}),
    session: { id: sessionId, store, notify, ...(door.quota !== undefined ? { quota: door.quota } : {}) },
  });
  const acceptance = config.accept ?? state?.header?.acceptance ?? [];
  const timeout = config.acceptTimeoutMs ?? DEFAULT_ACCEPT_TIMEOUT_MS;
  const limits: Partial<Limits> = {
    ...(definedOnly(config.limits ?? {}) as Partial<Limits>),
    contextWindowTokens: setup.context.window,
    replyReserveTokens: setup.context.reserve,
  };
  return {
    run: {
      workspace,
      sessionId,
      ...(door.store !== undefined ? { store: door.store } : {}),
      mode: records.length > 0 ? "resume" : "new",
      setup,
      acceptance: acceptance.map((command) => setup.acceptanceCheck(command, timeout)),
      limits,
      notify,
      ...(door.quota !== undefined ? { quota: door.quota } : {}),
    },
    records,
    acceptance,
  };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * A resumed session keeps the isolation it was started with: the command line of a resume (which
 * a script or another person may type) cannot give its commands more access than was recorded.
 * Tightening is fine. A looser profile needs a new session.
 */
function refuseLooserSandbox(given: SandboxFlag | undefined, recorded: unknown): void {
  if (given === undefined) return;
  const baseline: SandboxFlag =
    recorded === "off" || recorded === "read-only" || recorded === "workspace-write"
      ? recorded
      : "workspace-write";
  if (isLooser(profileOf(given), profileOf(baseline))) {
    throw new UsageError(
      `--sandbox ${given} would give this resumed session's commands more access than it was started with ` +
        `(${baseline}); start a new session to change it`,
    );
  }
}
