import { MemoryArtifactStore } from "../../artifacts/memory-store.js";
import { Engine } from "../../engine/engine.js";
import type { Limits, RunSummary } from "../../engine/options.js";
import { MemoryJournalStore } from "../../journal/memory-store.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import { modePolicy } from "../../policy/policy-permissions.js";
import { ScopedPermissions, validateScope } from "../../policy/scope.js";
import { subjectKindOf } from "../../policy/subject-kind.js";
import { proposalsOf, type RecordedProposal } from "../../proposals/ledger.js";
import { ProposalOverlay } from "../../proposals/overlay.js";
import type { ModelMessage } from "../../protocol/types.js";
import { ScriptedProvider } from "../../providers/scripted/provider.js";
import type { ApprovalPort } from "../../runtime/ports.js";
import { ToolRegistry } from "../../runtime/registry.js";
import { digestOf, sha256Hex } from "../../shared/hash.js";
import { createFileTools } from "../../tools/builtin.js";
import { MemoryWorkspaceFs } from "../../workspace/memory-fs.js";
import { TASK_GOAL, TASK_SCOPE, VIRTUAL_REPO } from "./repo.js";

/** What a lesson's scripted model sees at each step. */
export interface ScriptTurn {
  messages: readonly ModelMessage[];
  step: number;
  /** A person changing a file of the repository while the agent works (not the agent). */
  humanEdit(path: string, content: string): Promise<void>;
}

export interface LessonSetup {
  /** Session id, also the scripted model's name. */
  name: string;
  script(turn: ScriptTurn): unknown;
  limits?: Partial<Limits>;
}

export interface LessonRun {
  summary: RunSummary;
  records: AnyRecord[];
  proposals: RecordedProposal[];
  /** Every file's bytes before the run, and after it. */
  before: Record<string, Uint8Array>;
  after: Record<string, Uint8Array>;
  /** The repository as the people left it (before the run, plus their edits during it). */
  expected: Record<string, Uint8Array>;
  /** True when the agent changed no byte of the repository. */
  unchangedByAgent: boolean;
}

const denyApprover: ApprovalPort = {
  async request() {
    return { decision: "deny", scope: "once", by: "learning", reason: "the lesson has no approver" };
  },
};

/**
 * Run one lesson on the real runtime (Engine, ToolRuntime, the built-in file tools) over an
 * in-memory repository and journal: writes are proposed (ProposalOverlay), the task scope wraps
 * the write-mode policy, and the model is a deterministic script. The tools do not know which
 * file system they run on.
 */
export async function runLesson(setup: LessonSetup): Promise<LessonRun> {
  const repo = new MemoryWorkspaceFs(VIRTUAL_REPO, { label: "virtual-repo" });
  const backend = new MemoryJournalStore();
  const registry = new ToolRegistry();
  for (const tool of createFileTools()) registry.register(tool);
  const snapshot = registry.snapshot();
  const scope = await validateScope(TASK_SCOPE, repo);
  const writes = modePolicy({ write: "propose" });
  const permissions = new ScopedPermissions(writes, scope, (name) => {
    const entry = snapshot.get(name);
    return entry ? subjectKindOf(entry.tool) : undefined;
  });
  const describe = { ...writes.describe, scope: scope.describe() };

  const before = repo.snapshot();
  let expected = before;
  const humanEdit = async (path: string, content: string) => {
    await repo.writeFileAtomic(path, new TextEncoder().encode(content));
    expected = repo.snapshot();
  };
  const provider = ScriptedProvider.fromFunction(
    (messages, step) => setup.script({ messages, step, humanEdit }),
    setup.name,
  );
  const engine = new Engine({
    sessionId: setup.name,
    backend,
    provider,
    runtime: { snapshot, fs: repo, artifacts: new MemoryArtifactStore(), approver: denyApprover },
    workspace: { name: "virtual-repo", fingerprint: sha256Hex("virtual-repo") },
    goal: TASK_GOAL,
    policy: { describe, digest: digestOf(describe), permissions },
    acceptance: [],
    proposals: (existing) => new ProposalOverlay(repo, existing),
    limits: setup.limits ?? {},
    mode: "new",
    harnessVersion: "learning",
  });
  const summary = await engine.run();
  const records = await backend.read(setup.name);
  const after = repo.snapshot();
  return {
    summary,
    records,
    proposals: proposalsOf(records).current,
    before,
    after,
    expected,
    unchangedByAgent: sameFiles(after, expected),
  };
}

/** Byte-for-byte equality of two repository snapshots (same paths, same bytes). */
export function sameFiles(a: Record<string, Uint8Array>, b: Record<string, Uint8Array>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => {
    const other = b[key];
    return other !== undefined && Buffer.from(a[key] as Uint8Array).equals(Buffer.from(other));
  });
}
