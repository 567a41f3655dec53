import { join } from "node:path";
import { FileArtifactStore } from "../../artifacts/file-store.js";
import type { CheckOutcome } from "../../engine/acceptance.js";
import { SessionState } from "../../engine/state.js";
import type { AnyNewEvent } from "../../journal/vocabulary.js";
import { applyProposals } from "../../proposals/apply.js";
import { type ApplyOutcome, proposalsOf } from "../../proposals/ledger.js";
import { deleteIfStill } from "../agents/merge.js";
import { configNamedFiles } from "../config-hooks.js";
import { loadConfigForCli } from "../governance.js";
import { IGNORE_NOTICES, type Notify } from "../notice.js";
import { standaloneAcceptance } from "../processes.js";
import { UsageError } from "../usage-error.js";
import type { OpenedWorkspace } from "../workspace.js";

export interface ApplyRequest {
  /** Acceptance commands, run in the workspace after every proposal applied. */
  commands: readonly string[];
  acceptTimeoutMs: number;
  env: NodeJS.ProcessEnv;
  notify?: Notify;
}

export type ApplyStatus =
  | "nothing_to_apply"
  | "conflict"
  | "already_applied"
  | "applied"
  | "verified"
  | "acceptance_failed";

export interface ApplyReport {
  status: ApplyStatus;
  outcomes: ApplyOutcome[];
  acceptance: { accepted: boolean; checks: CheckOutcome[] } | undefined;
  /** Acceptance commands were given but not run: a proposal could not be applied. */
  skippedAcceptance: boolean;
}

/**
 * Apply a propose-mode session's proposals to its workspace (harness apply), then run the
 * acceptance commands. Everything is decided on the records read under the writer lock (which
 * proposals are current, which already applied, the session's workspace), and every outcome is
 * journaled through that writer.
 */
export async function applySession(
  workspace: OpenedWorkspace,
  sessionId: string,
  request: ApplyRequest,
): Promise<ApplyReport> {
  const { commands } = request;
  const notify = request.notify ?? IGNORE_NOTICES;
  if (commands.some((command) => command.trim() === "")) throw new UsageError("--accept needs a command");
  const config = await loadConfigForCli(workspace.root, request.env);
  // A proposal for a hook file the configs name is refused like a write to it would be.
  workspace.fs.protectFiles(configNamedFiles(config, workspace.root));
  const acceptanceRunner = standaloneAcceptance(
    config,
    workspace.root,
    workspace.fs.protectedPaths,
    request.env,
  );
  if (commands.length > 0) {
    for (const message of acceptanceRunner.notices) notify({ level: "note", message });
  }

  const writer = await workspace.store.openWriter(sessionId, { create: false });
  try {
    const recorded = await writer.readAll();
    const header = SessionState.from(recorded).header;
    if (header !== undefined && header.workspace.fingerprint !== workspace.identity.fingerprint) {
      throw new UsageError(`session "${sessionId}" was recorded in another workspace; apply it there`);
    }
    const record = async (...events: AnyNewEvent[]) => {
      await writer.append(events);
    };
    // A sub-agent's proposals may delete a file or keep their content in the session's artifacts.
    const artifacts = new FileArtifactStore(join(workspace.sessionDir(sessionId), "artifacts"));
    const outcomes = await applyProposals({
      fs: workspace.fs,
      proposals: proposalsOf(recorded),
      record: (outcome) => record({ type: "proposal.applied", data: outcome }),
      remove: (path, version) => deleteIfStill(workspace.root, path, version),
      artifact: (id) => artifacts.read(id),
    });
    const conflicts = outcomes.some((o) => o.outcome === "conflict");
    let acceptance: ApplyReport["acceptance"];
    if (commands.length > 0 && !conflicts && outcomes.length > 0) {
      // Checks run against the workspace as applied: that is what "verified" is about.
      const signal = new AbortController().signal;
      const checks: CheckOutcome[] = [];
      for (const command of commands) {
        checks.push(await acceptanceRunner.check(command, request.acceptTimeoutMs).run(signal));
      }
      acceptance = { accepted: checks.every((c) => c.passed), checks };
      await record({ type: "acceptance.checked", data: acceptance });
      if (acceptance.accepted) {
        const answer = SessionState.from(await writer.readAll()).lastReply?.text ?? "";
        await record({ type: "run.finished", data: { status: "verified", answer } });
      }
    }
    return {
      status: applyStatus(outcomes, acceptance),
      outcomes,
      acceptance,
      skippedAcceptance: commands.length > 0 && conflicts,
    };
  } finally {
    await writer.close();
  }
}

function applyStatus(outcomes: readonly ApplyOutcome[], acceptance: ApplyReport["acceptance"]): ApplyStatus {
  if (outcomes.length === 0) return "nothing_to_apply";
  if (outcomes.some((o) => o.outcome === "conflict")) return "conflict";
  if (acceptance === undefined)
    return outcomes.every((o) => o.outcome === "already_applied") ? "already_applied" : "applied";
  return acceptance.accepted ? "verified" : "acceptance_failed";
}
