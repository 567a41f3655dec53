import type { ArtifactStore } from "../../../artifacts/store.js";
import { Engine } from "../../../engine/engine.js";
import type { EngineListener, RunSummary } from "../../../engine/options.js";
import type { JournalStore } from "../../../journal/store.js";
import type { ReservationDb } from "../../../packs/reservations/database.js";
import { TaskPermissionPolicy } from "../../../packs/reservations/policy.js";
import { type ReservationTask, taskGoal } from "../../../packs/reservations/task.js";
import { createReservationTools } from "../../../packs/reservations/tools.js";
import type { Provider } from "../../../providers/provider.js";
import type { ApprovalPort } from "../../../runtime/ports.js";
import { ToolRegistry } from "../../../runtime/registry.js";
import type { WorkspaceFs } from "../../../workspace/fs.js";
import { ClaimAcceptance } from "./verify.js";

/** The task policy never asks; anything that reaches an approver is refused. */
const refuseApprover: ApprovalPort = {
  async request() {
    return {
      decision: "deny",
      scope: "once",
      by: "reservation-task",
      reason: "reservation tasks have no approver",
    };
  },
};

export interface ReservationSessionOptions {
  task: ReservationTask;
  db: ReservationDb;
  provider: Provider;
  store: JournalStore;
  fs: WorkspaceFs;
  artifacts: ArtifactStore;
  workspace: { name: string; fingerprint: string };
  /** Stock levels when the task began: the claim check compares against them. */
  stockBefore: Record<string, number>;
  sessionId?: string;
  mode?: "new" | "resume" | "auto";
  harnessVersion?: string;
  listener?: EngineListener;
  signal?: AbortSignal;
}

/**
 * An engine for one reservation task: the pack's four tools over `db`, the task's executor
 * policy, the task's tool budget, and the claim check as acceptance.
 */
export function reservationEngine(options: ReservationSessionOptions): Engine {
  const { task, db } = options;
  const registry = new ToolRegistry();
  for (const tool of createReservationTools(db)) registry.register(tool);
  const policy = new TaskPermissionPolicy(task);
  const sessionId = options.sessionId ?? task.id;
  return new Engine({
    sessionId,
    store: options.store,
    provider: options.provider,
    runtime: {
      snapshot: registry.snapshot(),
      fs: options.fs,
      artifacts: options.artifacts,
      approver: refuseApprover,
    },
    workspace: options.workspace,
    goal: taskGoal(task),
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: [new ClaimAcceptance(task, db, options.stockBefore, () => options.store.read(sessionId))],
    limits: {
      maxToolCalls: task.max_tool_calls,
      maxModelRequests: task.max_tool_calls + 4,
      maxModelAttempts: 1,
    },
    mode: options.mode ?? "new",
    harnessVersion: options.harnessVersion ?? "reservations",
    ...(options.listener ? { listener: options.listener } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

export function runReservationTask(options: ReservationSessionOptions): Promise<RunSummary> {
  return reservationEngine(options).run();
}
