import type { EventData } from "../journal/vocabulary.js";
import type { ToolSnapshot } from "../runtime/registry.js";
import { digestOf } from "../shared/hash.js";

/**
 * The tool surface the model sees can change during a session (an MCP server announces a new
 * tool list). A change is applied only at a step boundary, never while calls run, and is
 * journaled as a whole new snapshot (`tools.changed`), so replay and `inspect` know exactly which
 * tools the model was offered at each step, and a resume compares against the latest one.
 */
export interface ToolSurfaceSource {
  /**
   * Called at each step boundary before a model request: a new snapshot when the tools changed
   * since `current`, else undefined. Must not throw for a server that is down: its tools simply
   * stay (calls to them fail on their own).
   */
  refresh(current: ToolSnapshot, signal: AbortSignal): Promise<ToolSnapshot | undefined>;
  /** Tools listed for the latest surface that cannot be offered, with why (journaled with it). */
  unavailable?(): readonly UnavailableTool[];
}

export type UnavailableTool = NonNullable<ToolsChanged["unavailable"]>[number];

export type ToolsChanged = EventData<"tools.changed">;

/** Each tool's own digest (what the model is shown and how it is classed), by name. */
export function toolDigests(snapshot: ToolSnapshot): Map<string, string> {
  return new Map(
    snapshot.entries.map((e) => [
      e.tool.name,
      digestOf({ spec: e.spec, version: e.tool.version, effect: e.tool.effect }),
    ]),
  );
}

/** The event recording a move from one surface to the next: the whole new list, and the difference. */
export function toolsChanged(
  before: ReadonlyMap<string, string | undefined>,
  previousDigest: string,
  next: ToolSnapshot,
  step: number,
  reason: ToolsChanged["reason"],
  unavailable: readonly UnavailableTool[] = [],
): ToolsChanged {
  const after = toolDigests(next);
  return {
    ...(unavailable.length > 0 ? { unavailable: unavailable.map((entry) => ({ ...entry })) } : {}),
    step,
    reason,
    previous_digest: previousDigest,
    tools_digest: next.digest,
    tools: next.entries.map((e) => ({
      name: e.tool.name,
      version: e.tool.version,
      effect: e.tool.effect,
      digest: after.get(e.tool.name) as string,
    })),
    added: [...after.keys()].filter((name) => !before.has(name)),
    removed: [...before.keys()].filter((name) => !after.has(name)),
    changed: [...after]
      .filter(([name, digest]) => before.has(name) && before.get(name) !== digest)
      .map(([n]) => n),
  };
}

/** The `unavailable` field of session.started: the tools listed at the start but not offered, if any. */
export function startUnavailable(unavailable: readonly UnavailableTool[] | undefined): {
  unavailable?: UnavailableTool[];
} {
  return unavailable !== undefined && unavailable.length > 0
    ? { unavailable: unavailable.map((entry) => ({ ...entry })) }
    : {};
}
