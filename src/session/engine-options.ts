import { join } from "node:path";
import { FileArtifactStore } from "../artifacts/file-store.js";
import type { AcceptanceCheck } from "../engine/acceptance.js";
import type { EngineListener, EngineOptions, GoalLoop, Limits, TurnAttachments } from "../engine/options.js";
import type { QuotaPort } from "../engine/quota-port.js";
import type { JournalStore } from "../journal/store.js";
import type { RuntimeEnvironment } from "../runtime/environment.js";
import { type BackgroundOwners, WorkspaceEffects } from "../runtime/workspace-effects.js";
import type { JsonObject } from "../shared/json.js";
import { TreeSnapshot } from "../workspace/tree-snapshot.js";
import { IGNORE_NOTICES, type Notify } from "./notice.js";
import { type RunFlags, recordableFlags } from "./run-flags.js";
import type { RunSetup } from "./setup.js";
import { harnessVersion } from "./version.js";
import type { OpenedWorkspace } from "./workspace.js";

/** A session ready to run: its workspace, id, task, setup, acceptance and limits, as every door builds it. */
export interface SessionRun {
  workspace: OpenedWorkspace;
  sessionId: string;
  mode: "new" | "resume" | "auto";
  goal?: string;
  /** The next turn's input for an existing session (harness run --continue / --session ID PROMPT). */
  input?: string;
  /** Images and the command template that come with the goal or input (EngineOptions.attachments). */
  attachments?: TurnAttachments;
  /** harness compact: compact the stopped session now instead of continuing it. */
  compactOnly?: { instructions?: string };
  /** The chat's `!command`: run the person's shell command in the stopped session (EngineOptions.userCommand). */
  userCommand?: { command: string; share: boolean };
  setup: Pick<RunSetup, "provider" | "snapshot" | "policy" | "approver"> & Partial<RunSetup>;
  acceptance: AcceptanceCheck[];
  limits: Partial<Limits>;
  /** --accept-tool-changes: resume with a tool surface that differs from the recorded one. */
  acceptToolChanges?: boolean;
  /** Where notices of the session's setup and record go (the library prints nothing). */
  notify?: Notify;
  /** The journal, when not the workspace's own (a fleet worker's PostgreSQL journal under its lease). */
  store?: JournalStore;
  /**
   * A turn that could change nothing because every change was denied stops as `changes_denied`
   * (harness run: an agent that could change nothing has not done its task).
   */
  changesDeniedStops?: boolean;
  /** The identity that owns the session (a server's client), recorded in session.started's setup. */
  owner?: string;
  /** A quota shared with other sessions (a fleet queue's): EngineOptions.quota, at the model's prices. */
  quota?: QuotaPort;
  /**
   * What a door records of its own in session.started's setup: an editor's (ACP) write mode
   * chosen before the first turn (`mode`; later switches are `mode.switched` records) and the
   * MCP servers it passed (`editor_mcp_servers`: name and definition digest).
   */
  doorSetup?: JsonObject;
  /** One call's own cancellation from whoever proposed it (RuntimeEnvironment.callSignal: mcp serve). */
  callSignal?(callId: string): AbortSignal | undefined;
}

/** Where a CLI session's tool calls run: its workspace, its artifacts, and the setup's ports. */
export function runtimeEnvironment(
  workspace: OpenedWorkspace,
  sessionId: string,
  setup: SessionRun["setup"],
  notify?: Notify,
): RuntimeEnvironment {
  const artifacts = new FileArtifactStore(join(workspace.sessionDir(sessionId), "artifacts"));
  return {
    snapshot: setup.snapshot,
    fs: workspace.fs,
    hostRoot: workspace.root,
    artifacts,
    effects: workspaceEffects(
      workspace,
      artifacts,
      setup.workspaceExcludes ?? [],
      setup.workspaceWithheld,
      notify ?? IGNORE_NOTICES,
      setup.processes?.background,
    ),
    approver: setup.approver,
    ...(setup.grants ? { grants: setup.grants } : {}),
    ...(setup.hooks ? { hooks: setup.hooks } : {}),
    ...(setup.timeoutFor ? { timeoutFor: setup.timeoutFor } : {}),
  };
}

/**
 * The record of a session's workspace effects. A first walk of a large tree (everything is hashed
 * and kept once) says through `notify` how far it got.
 */
function workspaceEffects(
  workspace: OpenedWorkspace,
  artifacts: FileArtifactStore,
  excludes: readonly string[],
  withheld: ((path: string) => boolean) | undefined,
  notify: Notify,
  background: BackgroundOwners | undefined,
) {
  const warn = (message: string) => notify({ level: "warning", message: `workspace record: ${message}` });
  const tree = new TreeSnapshot({
    root: workspace.root,
    stateDir: workspace.harnessDir,
    excludes,
    warn,
    ...(withheld ? { withheld } : {}),
    progress: (done, hashed) =>
      notify({
        level: "progress",
        message: `recording the workspace: ${done} files listed, ${hashed} hashed`,
      }),
  });
  return new WorkspaceEffects(tree, artifacts, warn, background);
}

/** The engine options of a session: its setup, workspace, task and limits (one place for every door). */
export function sessionEngineOptions(
  run: SessionRun,
  signal: AbortSignal,
  listener: EngineListener,
): EngineOptions {
  return {
    sessionId: run.sessionId,
    store: run.store ?? run.workspace.store,
    provider: run.setup.provider,
    runtime: {
      ...runtimeEnvironment(run.workspace, run.sessionId, run.setup, run.notify),
      ...(run.callSignal ? { callSignal: run.callSignal } : {}),
    },
    workspace: run.workspace.identity,
    ...(run.goal !== undefined ? { goal: run.goal } : {}),
    ...(run.input !== undefined ? { input: run.input } : {}),
    ...(run.attachments !== undefined ? { attachments: run.attachments } : {}),
    policy: run.setup.policy,
    ...(run.setup.processes ? { processes: run.setup.processes } : {}),
    ...(run.setup.proposals ? { proposals: run.setup.proposals } : {}),
    ...(run.setup.providerAdvice ? { providerAdvice: run.setup.providerAdvice } : {}),
    ...(run.setup.instructions ? { instructions: run.setup.instructions } : {}),
    ...(run.setup.environment ? { environment: run.setup.environment } : {}),
    ...(run.setup.flags || run.owner !== undefined || run.doorSetup !== undefined
      ? {
          setup: {
            // First: a door's own keys never replace the flags or the owner.
            ...(run.doorSetup ?? {}),
            ...(run.setup.flags ? recordableFlags(run.setup.flags) : {}),
            ...(run.owner !== undefined ? { identity: run.owner } : {}),
          },
        }
      : {}),
    acceptance: run.acceptance,
    ...goalLoopOf(run.setup.flags),
    limits: run.limits,
    ...(run.setup.flags?.maxCostUsd !== undefined && run.setup.prices !== undefined
      ? { moneyBudget: { maxCostUsd: run.setup.flags.maxCostUsd, prices: run.setup.prices } }
      : {}),
    ...(run.quota !== undefined
      ? {
          quota: { port: run.quota, ...(run.setup.prices !== undefined ? { prices: run.setup.prices } : {}) },
        }
      : {}),
    signal,
    listener,
    mode: run.mode,
    ...(run.compactOnly ? { compactOnly: run.compactOnly } : {}),
    ...(run.userCommand ? { userCommand: run.userCommand } : {}),
    ...(run.acceptToolChanges ? { acceptToolChanges: true } : {}),
    ...(run.changesDeniedStops ? { changesDeniedStops: true } : {}),
    ...(run.setup.toolSurface ? { toolSurface: run.setup.toolSurface } : {}),
    ...(run.setup.deferTools ? { deferTools: run.setup.deferTools } : {}),
    harnessVersion: harnessVersion(),
  };
}

/** The goal loop the flags ask for (`--until-accepted N`, `--no-progress K`), if any. */
function goalLoopOf(flags: RunFlags | undefined): { goalLoop?: GoalLoop } {
  const attempts = flags?.untilAccepted;
  if (attempts === undefined || attempts < 1) return {};
  return { goalLoop: { attempts, noProgress: flags?.noProgress ?? DEFAULT_NO_PROGRESS } };
}

/** Attempts in a row without progress that end a goal loop, unless --no-progress says otherwise. */
export const DEFAULT_NO_PROGRESS = 2;
