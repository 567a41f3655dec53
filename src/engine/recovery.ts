import type { AnyNewEvent, EventData } from "../journal/vocabulary.js";
import { errorResult, okResult, resultFromThrown, type ToolResult } from "../runtime/result.js";
import type { UntrustedWatch } from "../runtime/untrusted.js";
import { createToolContext } from "../tools/context.js";
import { ToolError } from "../tools/errors.js";
import type { BackgroundProcesses } from "../tools/shell/background.js";
import type { CatalogPort } from "../tools/tool.js";
import type { ChangeSet } from "../workspace/manifest.js";
import { delegationPort } from "./delegation.js";
import type { RunSummary } from "./options.js";
import { type EngineRun, stop } from "./outcome.js";

export interface SpawnInfo {
  callId: string;
  pid: number;
  pgid: number;
  bootId: string;
  startTicks: number;
  sandboxed: boolean;
  /** What the process ran under (journaled when known). */
  purpose?: "shell" | "acceptance" | "hook" | "mcp_server" | "workspace";
  sandbox_profile?: "workspace-write" | "read-only" | "none";
  env_names?: string[];
}

/** A connection of a call's processes through its egress proxy, as `net.connection` records it. */
export type ConnectionInfo = EventData<"net.connection">;

/** A credential the egress proxy substituted, as `credential.used` records it. */
export type CredentialUseInfo = EventData<"credential.used">;

/**
 * Connects process-running tools to the journal: the tool reports each spawned process group
 * (before waiting on it) through `onSpawn`, and each connection its processes made through the
 * call's egress proxy through `onConnection`; the engine journals them durably.
 */
export class SpawnJournal {
  private sink: ((event: AnyNewEvent) => Promise<void>) | undefined;
  /** Services started before the session could record them (MCP servers start before it opens). */
  private held: SpawnInfo[] = [];
  /** Connections such services made before then (a server that fetches at start). */
  private heldConnections: ConnectionInfo[] = [];
  private open = false;
  readonly onSpawn = async (info: SpawnInfo): Promise<void> => {
    if (!this.sink) throw new Error("no session is recording spawns");
    await this.sink(spawnedEvent(info));
  };
  /** Journal a connection while its call runs; rejects when no session is recording. */
  readonly onConnection = async (info: ConnectionInfo): Promise<void> => {
    if (!this.sink) throw new Error("no session is recording connections");
    await this.sink({ type: "net.connection", data: info });
  };
  /** Journal a credential substitution while its call runs; rejects when no session is recording. */
  readonly onCredentialUsed = async (info: CredentialUseInfo): Promise<void> => {
    if (!this.sink) throw new Error("no session is recording credential use");
    await this.sink({ type: "credential.used", data: info });
  };
  /**
   * A long-lived process that belongs to the session rather than to a call (an MCP stdio
   * server): journaled at once while the session is open, otherwise held until `flush`.
   */
  readonly onServiceSpawn = async (info: SpawnInfo): Promise<void> => {
    if (this.open) await this.onSpawn(info);
    else this.held.push(info);
  };
  /**
   * A connection of a long-lived process that belongs to the session (an MCP server with network
   * policy): journaled at once while the session is open, otherwise held until `flush`, so one
   * made before the session opens (or between turns) is still recorded.
   */
  readonly onServiceConnection = async (info: ConnectionInfo): Promise<void> => {
    if (this.open && this.sink) await this.onConnection(info);
    else this.heldConnections.push(info);
  };
  attach(sink: ((event: AnyNewEvent) => Promise<void>) | undefined): void {
    this.sink = sink;
    if (sink === undefined) this.open = false;
  }
  /** Journal the held services; later ones are journaled as they start. */
  async flush(): Promise<void> {
    for (const info of this.held.splice(0)) await this.onSpawn(info);
    for (const info of this.heldConnections.splice(0)) await this.onConnection(info);
    this.open = true;
  }
}

export interface ProcessSupervision {
  journal: SpawnJournal;
  /**
   * What the session's network reads of this turn's untrusted content and the hosts contacted
   * before: the engine attaches its state while a run is open.
   */
  untrusted?: UntrustedWatch;
  /** Kill what is left of a recorded process group; returns how many processes were killed. */
  killSurvivors(spawn: { pgid: number; bootId: string; startTicks: number }): Promise<number>;
  /** The session's background processes (`shell` with `background: true`), when it has a shell. */
  background?: BackgroundProcesses;
}

/** The `process.spawned` event for a reported process group. */
export function spawnedEvent(info: SpawnInfo): AnyNewEvent {
  return {
    type: "process.spawned",
    data: {
      call_id: info.callId,
      pid: info.pid,
      pgid: info.pgid,
      boot_id: info.bootId,
      start_ticks: info.startTicks,
      sandboxed: info.sandboxed,
      ...(info.purpose ? { purpose: info.purpose } : {}),
      ...(info.sandbox_profile ? { sandbox_profile: info.sandbox_profile } : {}),
      ...(info.env_names ? { env_names: info.env_names } : {}),
    },
  };
}

/**
 * The outcome of a call that started but never settled. Survivors of its process group are
 * killed first. A tool that can look the outcome up (reconcile) reports the real one;
 * otherwise it is unknown: never guessed, never replayed.
 */
async function recover(run: EngineRun, started: EventData<"tool.started">): Promise<ToolResult> {
  const id = { call_id: started.call_id, name: started.name };
  let killed = 0;
  const supervision = run.options.processes;
  if (supervision) {
    for (const spawn of run.state.spawns.filter((s) => s.call_id === started.call_id)) {
      killed += await supervision.killSurvivors({
        pgid: spawn.pgid,
        bootId: spawn.boot_id,
        startTicks: spawn.start_ticks,
      });
    }
  }
  const note = killed > 0 ? ` ${killed} surviving process(es) of it were killed.` : "";
  // tool_search is offered, not part of the surface.
  const entry = run.tools().get(started.name) ?? run.offered().get(started.name);
  if (entry?.tool.reconcile && entry.tool.version === started.tool_version) {
    const parsed = entry.tool.input.safeParse(started.arguments);
    if (parsed.success) {
      try {
        const changes: ChangeSet[] = [];
        const effects = run.options.runtime.effects;
        const context = createToolContext({
          callId: started.call_id,
          signal: run.signal,
          fs: run.options.runtime.fs,
          artifacts: run.options.runtime.artifacts,
          observedVersion: (path) => run.state.observed.get(path),
          hostRoot: run.options.runtime.hostRoot,
          // A reconciling tool that finishes the work (a child's merge) reports its writes as any call does.
          ...(effects
            ? {
                workspaceChanged: (change: ChangeSet) => {
                  const kept = effects.toolChanged(change);
                  if (kept) changes.push(kept);
                },
              }
            : {}),
          ...(entry.tool.delegates ? { delegation: delegationPort(run) } : {}),
          ...(entry.tool.nests && run.nestedCalls
            ? { subCalls: run.nestedCalls(started, rerunPrefix(run, started.call_id)) }
            : {}),
          ...(entry.tool.catalogs ? catalogOf(run) : {}),
        });
        const output = await entry.tool.reconcile(parsed.data, context);
        for (const change of changes)
          await run.record(effects!.event(started.call_id, { source: "tool", change }));
        if (output) {
          const result = okResult(id, output, 0);
          // A nesting tool (batch) reads only: it was run again, its earlier sub-calls kept.
          result.summary = `${entry.tool.nests ? "re-run" : "reconciled"} after an interruption: ${output.summary}`;
          result.data = { ...output.data, reconciled: true };
          return result;
        }
      } catch (error) {
        // A re-run program that failed is a known outcome of a read-only call, not an unknown one.
        if (entry.tool.nests && error instanceof ToolError) {
          const result = resultFromThrown(id, error, 0);
          result.summary = `re-run after an interruption: ${result.summary}`;
          result.data = { ...result.data, reconciled: true };
          return result;
        }
        // A failed lookup proves nothing either way: fall through to unknown.
      }
    }
  }
  return errorResult(
    id,
    "UNKNOWN_OUTCOME",
    `${started.name} (call ${started.call_id}) started but its outcome was never recorded; it was not run again.${note}`,
    { data: { killed_processes: killed } },
  );
}

/**
 * Once the session has its header: the services (MCP servers) an earlier harness process of this
 * session started and did not stop, because it was killed, are killed now, like a crashed call's
 * processes; then this process's own services are journaled, so that they are found in turn.
 */
export async function settleServices(run: EngineRun): Promise<void> {
  const supervision = run.options.processes;
  if (!supervision) return;
  for (const spawn of run.state.spawns.filter((s) => s.purpose === "mcp_server")) {
    await supervision.killSurvivors({
      pgid: spawn.pgid,
      bootId: spawn.boot_id,
      startTicks: spawn.start_ticks,
    });
  }
  await supervision.journal.flush();
}

/**
 * Before anything else on resume, every call a crash left started without a result gets one
 * (reconciled, or unknown). An unknown outcome stops the run for a person to review.
 */
export async function recoverOrphans(run: EngineRun): Promise<RunSummary | undefined> {
  const orphans = run.state.startedWithoutResult();
  // A program's read-only calls first: each is closed as interrupted (a read changed nothing),
  // before the batch that made them is run again under new ids.
  for (const started of orphans.filter(isNestedRead)) {
    const result = errorResult(
      { call_id: started.call_id, name: started.name },
      "CANCELLED",
      `${started.name} (call ${started.call_id}) was interrupted by a crash; it only read, so nothing changed.`,
      { data: { interrupted: true }, operationApplied: false },
    );
    await run.record({ type: "tool.result", data: { ...result, parent_call_id: started.parent_call_id } });
  }
  for (const started of orphans.filter((s) => !isNestedRead(s))) {
    const result = await recover(run, started);
    await run.record({ type: "tool.result", data: result });
  }
  if (run.state.hasUnknownOutcome()) {
    return stop(
      run,
      "review_required",
      "unknown_outcome",
      "a tool call's outcome is unknown; inspect the workspace",
    );
  }
  return undefined;
}

/** A call a program made inside another call, of a tool that only reads. */
function isNestedRead(started: EventData<"tool.started">): boolean {
  return (
    started.parent_call_id !== undefined && (started.effect === "read_only" || started.effect === "pure")
  );
}

/**
 * The ids a re-run of `callId` gives its sub-calls: `CALL/rK`, K one more than the re-runs the
 * journal already holds, so no id is ever used twice and the earlier results stay as they were.
 */
function rerunPrefix(run: EngineRun, callId: string): string {
  return `${callId}/r${run.state.callIds.latestRerun(callId) + 1}`;
}

/** The catalog a reconciling tool_search searches again (absent once nothing is deferred). */
function catalogOf(run: EngineRun): { catalog?: CatalogPort } {
  const catalog = run.catalog();
  return catalog ? { catalog } : {};
}
