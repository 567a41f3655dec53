import { z } from "zod";
import type { JsonObject, JsonValue } from "../../shared/json.js";
import { once } from "../../shared/lazy-record.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import {
  defineTool,
  type SubCallPort,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
} from "../tool.js";
import { DEFAULT_PROGRAM_LIMITS, type HostReply, type ProgramLimits, runProgram } from "./interpreter.js";

const input = once(() =>
  z.strictObject({
    program: z
      .string()
      .min(1)
      .max(100_000)
      .describe(
        "The body of an async JavaScript function: `await tools.NAME({...})` calls a read-only tool, `return` gives the result.",
      ),
    expected: z
      .number()
      .int()
      .min(0)
      .max(10_000)
      .optional()
      .describe(
        "How many sub-calls should succeed (e.g. one per listed module); fewer observed is said first.",
      ),
    max_calls: z
      .number()
      .int()
      .min(1)
      .max(1_000)
      .optional()
      .describe(`Sub-calls the program may issue (default ${DEFAULT_PROGRAM_LIMITS.calls}).`),
  }),
);

export type BatchArgs = z.infer<ReturnType<typeof input>>;

/** Above this many bytes the return value is left out of the result's data: the content (and its artifact) holds it. */
const VALUE_IN_DATA_BYTES = 16 * 1024;

/** A sub-call that did not succeed, as the result lists it. */
interface Failed {
  call_id: string;
  tool: string;
  code: string;
}

/**
 * `batch`: one read-only program that gathers evidence with many tool calls and reports what it
 * observed against what was expected. The program runs in QuickJS compiled to WebAssembly
 * (interpreter.ts), sees only `tools`, and every sub-call it makes is a call of its own through
 * the session's pipeline (SubCallPort): validated, authorized, journaled as `CALL/N`.
 */
export function createBatchTool(
  options: { limits?: Partial<ProgramLimits> } = {},
): ToolDefinition<BatchArgs> {
  const base: ProgramLimits = { ...DEFAULT_PROGRAM_LIMITS, ...options.limits };
  const run = async (args: BatchArgs, context: ToolContext, rerun: boolean): Promise<ToolOutput> => {
    const port = context.subCalls;
    if (port === undefined)
      throw new ToolError("RUNTIME_EXCEPTION", "batch runs only inside a session's runtime");
    const limits = { ...base, ...(args.max_calls !== undefined ? { calls: args.max_calls } : {}) };
    const tally = new Tally(port);
    const end = await runProgram(
      args.program,
      (name, callArgs, signal) => tally.call(name, callArgs, signal),
      limits,
      context.signal,
    );
    const facts = tally.facts(args.expected);
    if (end.kind === "cancelled") throw new ToolError("CANCELLED", "batch was cancelled", { data: facts });
    if (end.kind === "limit") {
      throw new ToolError(
        "BATCH_LIMIT",
        `batch ended at its ${end.limit} bound: ${end.message}. ${scope(facts)}`,
        {
          data: { limit: end.limit, ...facts },
          operationApplied: false,
        },
      );
    }
    if (end.kind === "threw") {
      throw new ToolError(
        "BATCH_PROGRAM_ERROR",
        `the batch program failed: ${end.message}. ${scope(facts)}`,
        {
          data: facts,
          operationApplied: false,
        },
      );
    }
    const bytes = Buffer.byteLength(end.json);
    const value = JSON.parse(end.json) as JsonValue;
    const data: JsonObject = {
      value: bytes <= VALUE_IN_DATA_BYTES ? value : null,
      ...facts,
      ...(bytes > VALUE_IN_DATA_BYTES ? { value_bytes: bytes, value_in: "content" } : {}),
      ...(rerun ? { rerun: { prefix: port.prefix } } : {}),
    };
    const first = scope(facts);
    return {
      summary: first,
      content: `${first}\n${JSON.stringify(value, null, 2)}`,
      data,
    };
  };
  return defineTool({
    name: "batch",
    description:
      "Run a small read-only JavaScript program that calls read-only tools (read_file, grep, glob, read_artifact, " +
      "trusted read-only MCP tools) and aggregates their results in one step, e.g. checking the same property in " +
      "many listed files. The program is the body of an async function: `const r = await tools.read_file({path: " +
      '"a.ts"})` resolves with {summary, content, data} and throws an Error with `code` (and call_id, tool) when the ' +
      "sub-call fails; catch it to keep going. `return` a JSON value. Pass `expected` (e.g. the number of files) so a " +
      "partial answer says so. No files are written, no commands run, no network, no clock. Bounds: " +
      `${DEFAULT_PROGRAM_LIMITS.calls} sub-calls (max_calls), ${DEFAULT_PROGRAM_LIMITS.concurrency} at once, ` +
      `${DEFAULT_PROGRAM_LIMITS.timeMs / 1000} s, memory and instructions; past one the result is BATCH_LIMIT naming it. ` +
      "Returns the value plus {calls, observed, expected, failed}.",
    version: "1",
    get input() {
      return input();
    },
    modelSchema: INPUT_SCHEMAS.batch,
    effect: "read_only",
    // Running it again only reads again, and a crash recovery does so (reconcile below) under
    // new sub-call ids; the runtime's own retry would reuse them, so it never retries it.
    idempotency: "conditionally_idempotent",
    timeoutMs: base.timeMs + 30_000,
    // Its sub-calls are scheduled inside it; it runs alone among the model's calls.
    resources: () => ({ exclusive: true }),
    concurrencySafe: () => false,
    nests: true,
    execute: (args, context) => run(args, context, false),
    /**
     * A batch cut by a crash is read-only by construction, so it is run again rather than
     * reported unknown; its sub-calls then are `CALL/rK/N`, and the earlier ones keep their results.
     */
    reconcile: (args, context) => run(args, context, true),
  });
}

/** The sub-calls of one run: ids in issue order, what each came to. */
class Tally {
  private issued = 0;
  private observed = 0;
  private readonly failed: Failed[] = [];

  constructor(private readonly port: SubCallPort) {}

  async call(name: string, args: JsonValue, signal: AbortSignal): Promise<HostReply> {
    this.issued += 1;
    const callId = `${this.port.prefix}/${this.issued}`;
    const outcome = await this.port.call({ id: callId, name, arguments: args }, signal);
    if (outcome.status === "ok") {
      this.observed += 1;
      const value: JsonObject = {
        summary: outcome.summary,
        content: outcome.content,
        data: outcome.data ?? {},
      };
      if (outcome.artifact) value.artifact = outcome.artifact;
      return { ok: true, value };
    }
    const code = outcome.error_type ?? outcome.status.toUpperCase();
    this.failed.push({ call_id: callId, tool: name, code });
    return {
      ok: false,
      error: { code, message: outcome.summary, call_id: callId, tool: name, status: outcome.status },
    };
  }

  facts(expected: number | undefined): BatchFacts {
    return {
      calls: this.issued,
      observed: this.observed,
      expected: expected ?? null,
      failed: this.failed.map((f) => ({ ...f })),
    };
  }
}

interface BatchFacts extends JsonObject {
  calls: number;
  observed: number;
  expected: number | null;
  failed: { call_id: string; tool: string; code: string }[];
}

/**
 * The first line: what was observed against what was expected, and every failure by id. A
 * partial answer is never worded as a complete one.
 */
function scope(facts: BatchFacts): string {
  const failures =
    facts.failed.length === 0
      ? ""
      : `; ${facts.failed.length} failed: ${facts.failed
          .slice(0, 20)
          .map((f) => `${f.call_id} ${f.tool} ${f.code}`)
          .join(", ")}${facts.failed.length > 20 ? ", …" : ""}`;
  if (facts.expected !== null && facts.observed < facts.expected)
    return `observed ${facts.observed} of ${facts.expected} expected${failures}`;
  const against = facts.expected !== null ? ` (expected ${facts.expected})` : "";
  return `observed ${facts.observed} of ${facts.calls} sub-calls${against}${failures}`;
}
