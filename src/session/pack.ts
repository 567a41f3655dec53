import type { ArtifactStore } from "../artifacts/store.js";
import type { AcceptanceCheck } from "../engine/acceptance.js";
import { Engine } from "../engine/engine.js";
import type { EngineListener, Limits, PolicyHandle } from "../engine/options.js";
import type { JournalStore } from "../journal/store.js";
import type { Provider } from "../providers/provider.js";
import type { ApprovalPort } from "../runtime/ports.js";
import { ToolRegistry } from "../runtime/registry.js";
import type { AnyTool } from "../tools/tool.js";
import type { WorkspaceFs } from "../workspace/fs.js";
import { type Turn, turnOf } from "./handle.js";
import { harnessVersion } from "./version.js";

/**
 * A session over a pack of its own: its tools, files, artifacts, policy and checks are given by
 * the caller instead of built from a workspace on disk and a configuration. The evaluation suites
 * use it (an in-memory workspace, a reservation database's tools, a claim checked in process), and
 * so can a product embedding harness with tools of its own. It runs on the same engine, journal,
 * pipeline and recovery as every other session; only where its pieces come from differs.
 */
export interface PackSession {
  sessionId: string;
  /** `new`: the session must not exist; `resume`: it must; `auto`: either. */
  mode: "new" | "resume" | "auto";
  goal?: string;
  /** The next turn's input for an existing session. */
  input?: string;
  store: JournalStore;
  /** What the journal records of the place: a name and a fingerprint, never a host path. */
  workspace: { name: string; fingerprint: string };
  fs: WorkspaceFs;
  /** The directory `fs` stands for, when it is one on disk (process-running tools need it). */
  hostRoot?: string;
  artifacts: ArtifactStore;
  /** The tools the model is offered, registered (and checked) in this order. */
  tools: readonly AnyTool[];
  provider: Provider;
  policy: PolicyHandle;
  /** Who answers `ask`; none: every `ask` is denied. */
  approver?: ApprovalPort;
  acceptance: readonly AcceptanceCheck[];
  limits?: Partial<Limits>;
  /** The version recorded in session.started; default harness's own. */
  harnessVersion?: string;
}

/** With nobody to answer, an `ask` is a denial that says so. */
const NOBODY_ASKS: ApprovalPort = {
  async request() {
    return { decision: "deny", scope: "once", by: "pack", reason: "this session has no approver" };
  },
};

/** Run one turn of a pack session (the first one starts it with `goal`). */
export function packTurn(pack: PackSession, listener: EngineListener = {}, signal?: AbortSignal): Turn {
  const registry = new ToolRegistry();
  for (const tool of pack.tools) registry.register(tool);
  return turnOf(
    new Engine({
      sessionId: pack.sessionId,
      store: pack.store,
      provider: pack.provider,
      runtime: {
        snapshot: registry.snapshot(),
        fs: pack.fs,
        ...(pack.hostRoot !== undefined ? { hostRoot: pack.hostRoot } : {}),
        artifacts: pack.artifacts,
        approver: pack.approver ?? NOBODY_ASKS,
      },
      workspace: pack.workspace,
      ...(pack.goal !== undefined ? { goal: pack.goal } : {}),
      ...(pack.input !== undefined ? { input: pack.input } : {}),
      policy: pack.policy,
      acceptance: pack.acceptance,
      limits: pack.limits ?? {},
      mode: pack.mode,
      listener,
      ...(signal !== undefined ? { signal } : {}),
      harnessVersion: pack.harnessVersion ?? harnessVersion(),
    }),
  );
}
