import type { ToolCall } from "../protocol/types.js";
import { isJsonObject } from "../shared/json.js";
import type { SubCallOutcome, SubCallPort } from "../tools/tool.js";
import { startedEvent } from "./batch.js";
import { resultEvents } from "./commit.js";
import type { NotOffered } from "./environment.js";
import type { HookLog } from "./hook-log.js";
import type { Recorder } from "./ports.js";
import { type Prepared, prepare } from "./prepare.js";
import type { ToolSnapshot } from "./registry.js";
import { errorResult, identity, type ToolResult } from "./result.js";

/**
 * Effect classes a program may call. `network_read` is left out on purpose: a request's URL
 * and query carry whatever the program puts in them, so a "read" of the network can send the
 * workspace's secrets anywhere. A trusted MCP server's read-only tool is `read_only`.
 */
const CALLABLE_EFFECTS: ReadonlySet<string> = new Set(["pure", "read_only"]);

/** What a nested call needs from the runtime that runs its parent. */
export interface SubCallDeps {
  parent: { id: string; batch: number };
  prefix: string;
  snapshot: ToolSnapshot;
  /** A tool of the session the model is not offered (deferred): refused as the model's call would be. */
  notOffered?: (name: string) => NotOffered | undefined;
  hooks: HookLog;
  recorder: Recorder;
  /** Tool calls the turn may still start; nested calls spend it as the model's calls do. */
  budget: { remaining: number };
  /** The authorization stage: a denial, or nothing when the call may run. */
  authorize(prepared: Prepared, signal: AbortSignal): Promise<ToolResult | undefined>;
  /** Execution to a normalized result (timeouts, retries, preview limit and artifacts). */
  run(prepared: Prepared, signal: AbortSignal): Promise<ToolResult>;
}

/**
 * The pipeline for a program's calls (`batch`): each is prepared, authorized, journaled as
 * `tool.started` before its handler runs and as `tool.result` after, with `parent_call_id`, as
 * a call of its own. Scheduling: concurrency-safe reads run together; a call that is not (or
 * claims every resource) waits until it can run alone.
 */
export function subCallPort(deps: SubCallDeps): SubCallPort {
  const gate = new SharedExclusive();
  const callable = (name: string): "allowed" | "forbidden" | "unknown" => {
    const tool = deps.snapshot.get(name)?.tool;
    if (tool === undefined) return "unknown";
    if (tool.nests || tool.delegates || !CALLABLE_EFFECTS.has(tool.effect)) return "forbidden";
    return "allowed";
  };
  const commit = async (result: ToolResult): Promise<SubCallOutcome> => {
    const settled: ToolResult = { ...result, parent_call_id: deps.parent.id };
    await deps.recorder.record(resultEvents(settled));
    return outcomeOf(settled);
  };
  return {
    prefix: deps.prefix,
    callable,
    call: async (request, signal) => {
      if (!request.id.startsWith(`${deps.prefix}/`))
        throw new Error(`a nested call's id must start with ${deps.prefix}/`);
      const args = isJsonObject(request.arguments) ? request.arguments : {};
      const call: ToolCall = { id: request.id, name: request.name, arguments: args };
      const id = identity(call);
      if (!isJsonObject(request.arguments)) {
        return commit(
          errorResult(id, "INVALID_ARGUMENTS", `Invalid arguments for ${call.name}: not an object`),
        );
      }
      if (callable(call.name) === "forbidden") {
        const effect = deps.snapshot.get(call.name)?.tool.effect ?? "unknown";
        return commit(
          errorResult(
            id,
            "BATCH_TOOL_FORBIDDEN",
            `${call.name} (${effect}) cannot be called from a batch program: only read-only tools can.`,
            { data: { effect }, operationApplied: false },
          ),
        );
      }
      const preparation = await prepare(0, call, deps.snapshot, deps.hooks, deps.notOffered);
      if (preparation.kind === "done") return commit(preparation.result);
      const prepared = preparation.prepared;
      if (signal.aborted) return commit(cancelled(id));
      const alone =
        !prepared.concurrencySafe || "exclusive" in prepared.resources || !!prepared.entry.tool.comparedAs;
      const release = await gate.acquire(alone);
      try {
        if (signal.aborted) return commit(cancelled(id));
        // Reserved before anyone is asked to approve it: nobody approves a call that cannot run.
        if (deps.budget.remaining <= 0) {
          return commit(
            errorResult(
              id,
              "BUDGET_EXHAUSTED",
              "The turn's tool-call budget is used up; this call did not run.",
              {
                operationApplied: false,
              },
            ),
          );
        }
        deps.budget.remaining -= 1;
        const denial = await deps.authorize(prepared, signal);
        if (denial) {
          deps.budget.remaining += 1;
          return commit(denial);
        }
        await deps.recorder.record([startedEvent(prepared, deps.parent.batch, deps.parent.id)]);
        return commit(await deps.run(prepared, signal));
      } finally {
        release();
      }
    },
  };
}

function cancelled(id: { call_id: string; name: string }): ToolResult {
  return errorResult(id, "CANCELLED", "The program ended before this call started.", {
    data: { started: false },
    operationApplied: false,
  });
}

/** The committed result as the program gets it: JSON fields only. */
function outcomeOf(result: ToolResult): SubCallOutcome {
  const outcome: SubCallOutcome = {
    call_id: result.call_id,
    name: result.name,
    status: result.status,
    summary: result.summary,
    content: result.content,
  };
  if (result.error_type !== undefined) outcome.error_type = result.error_type;
  if (result.data !== undefined) outcome.data = result.data;
  if (result.artifact !== undefined)
    outcome.artifact = { id: result.artifact.id, bytes: result.artifact.bytes };
  return outcome;
}

/** Many shared holders at once, or one exclusive holder; waiters are served in arrival order. */
class SharedExclusive {
  private shared = 0;
  private exclusive = false;
  private readonly waiting: { alone: boolean; go(): void }[] = [];

  acquire(alone: boolean): Promise<() => void> {
    return new Promise((resolve) => {
      this.waiting.push({ alone, go: () => resolve(() => this.release(alone)) });
      this.pump();
    });
  }

  private release(alone: boolean): void {
    if (alone) this.exclusive = false;
    else this.shared -= 1;
    this.pump();
  }

  private pump(): void {
    for (;;) {
      const next = this.waiting[0];
      if (next === undefined || this.exclusive) return;
      if (next.alone && this.shared > 0) return;
      this.waiting.shift();
      if (next.alone) this.exclusive = true;
      else this.shared += 1;
      next.go();
    }
  }
}
