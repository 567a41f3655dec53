import type { ArtifactStore } from "../../../artifacts/store.js";
import type { EngineListener, RunSummary } from "../../../engine/options.js";
import type { JournalStore } from "../../../journal/store.js";
import type { ReservationDb } from "../../../packs/reservations/database.js";
import { TaskPermissionPolicy } from "../../../packs/reservations/policy.js";
import { type ReservationTask, taskGoal } from "../../../packs/reservations/task.js";
import { createReservationTools } from "../../../packs/reservations/tools.js";
import type { Provider } from "../../../providers/provider.js";
import { packTurn } from "../../../session/pack.js";
import type { WorkspaceFs } from "../../../workspace/fs.js";
import { ClaimAcceptance } from "./verify.js";

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
 * One reservation task as a session over the pack: the pack's four tools over `db`, the task's
 * executor policy (which never asks: nothing reaches an approver), the task's tool budget, and the
 * claim check as acceptance.
 */
export function runReservationTask(options: ReservationSessionOptions): Promise<RunSummary> {
  const { task, db } = options;
  const policy = new TaskPermissionPolicy(task);
  const sessionId = options.sessionId ?? task.id;
  return packTurn(
    {
      sessionId,
      mode: options.mode ?? "new",
      goal: taskGoal(task),
      store: options.store,
      workspace: options.workspace,
      fs: options.fs,
      artifacts: options.artifacts,
      tools: createReservationTools(db),
      provider: options.provider,
      policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
      acceptance: [new ClaimAcceptance(task, db, options.stockBefore, () => options.store.read(sessionId))],
      limits: {
        maxToolCalls: task.max_tool_calls,
        maxModelRequests: task.max_tool_calls + 4,
        maxModelAttempts: 1,
      },
      harnessVersion: options.harnessVersion ?? "reservations",
    },
    options.listener,
    options.signal,
  ).done;
}
