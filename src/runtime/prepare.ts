import type { z } from "zod";
import type { ToolCall } from "../protocol/types.js";
import type { JsonObject } from "../shared/json.js";
import type { ResourceSet } from "../tools/tool.js";
import type { WorkspaceFs } from "../workspace/fs.js";
import type { NotOffered } from "./environment.js";
import type { HookLog } from "./hook-log.js";
import type { PermissionDecision, ProposalRecord } from "./ports.js";
import type { SnapshotEntry, ToolSnapshot } from "./registry.js";
import { errorResult, identity, resultFromThrown, type ToolResult } from "./result.js";
import { closestName } from "./suggest.js";

/** A call that passed lookup and validation. */
export interface Prepared {
  index: number;
  call: ToolCall;
  entry: SnapshotEntry;
  args: unknown;
  resources: ResourceSet;
  concurrencySafe: boolean;
  permission?: PermissionDecision;
  /** Propose mode: this call's view of the workspace with the pending proposals. */
  overlay?: { fs: WorkspaceFs; finish(): ProposalRecord[] };
}

/** A call either fails before running (its result is decided) or is ready to be authorized. */
export type Preparation = { kind: "done"; result: ToolResult } | { kind: "run"; prepared: Prepared };

/**
 * Lookup, schema validation and semantic validation, before anything else happens to a call.
 * No side effects but the validation hooks; a failure is a result for the model.
 */
export async function prepare(
  index: number,
  call: ToolCall,
  snapshot: ToolSnapshot,
  hooks: HookLog,
  notOffered?: (name: string) => NotOffered | undefined,
): Promise<Preparation> {
  const id = identity(call);
  if (call.refused !== undefined) {
    // The decoder kept no usable arguments (over a limit, or not recordable): never run.
    return done(
      errorResult(id, "INVALID_ARGUMENTS", `Invalid arguments for ${call.name}: ${call.refused.reason}`, {
        data: { refused: { reason: call.refused.reason, characters: call.refused.characters } },
      }),
    );
  }
  const hidden = snapshot.get(call.name) === undefined ? notOffered?.(call.name) : undefined;
  // Nothing about a tool that is not offered runs: it is refused before its arguments are read.
  if (hidden?.kind === "refuse")
    return done(errorResult(id, hidden.code, hidden.message, { data: hidden.data }));
  const entry = snapshot.get(call.name) ?? hidden?.entry;
  if (!entry) {
    const names = snapshot.names;
    const closest = closestName(call.name, names);
    const suggestion = closest ? ` Did you mean "${closest}"?` : "";
    return done(
      errorResult(
        id,
        "UNKNOWN_TOOL",
        `Unknown tool "${call.name}".${suggestion} Available tools: ${names.join(", ")}.`,
        {
          data: { available: names, ...(closest ? { closest } : {}) },
        },
      ),
    );
  }
  await hooks.notify("before_validate", call, entry);
  const parsed = entry.tool.input.safeParse(call.arguments);
  if (!parsed.success) {
    const fields = describeIssues(parsed.error);
    return done(
      errorResult(
        id,
        "INVALID_ARGUMENTS",
        `Invalid arguments for ${call.name}: ${fields.map((f) => f.text).join("; ")}`,
        {
          data: { fields: fields.map((f) => f.json) },
        },
      ),
    );
  }
  try {
    entry.tool.validate?.(parsed.data);
  } catch (error) {
    return done(resultFromThrown(id, error, 0));
  }
  await hooks.notify("after_validate", call, entry);
  return {
    kind: "run",
    prepared: {
      index,
      call,
      entry,
      args: parsed.data,
      resources: entry.tool.resources(parsed.data),
      concurrencySafe: entry.tool.concurrencySafe(parsed.data),
    },
  };
}

function done(result: ToolResult): Preparation {
  return { kind: "done", result };
}

/** Schema issues as one line for the model and one JSON entry per field. */
function describeIssues(error: z.ZodError): { text: string; json: JsonObject }[] {
  return error.issues.map((issue) => {
    const field = issue.path.length > 0 ? issue.path.join(".") : "(arguments)";
    const json: JsonObject = { field, code: issue.code, message: issue.message };
    if (issue.code === "invalid_type") json.expected = String(issue.expected);
    if (issue.code === "unrecognized_keys") json.keys = issue.keys;
    return { text: `${field}: ${issue.message}`, json };
  });
}
