import { z } from "zod";
import { once } from "../../shared/lazy-record.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { type AnyTool, defineTool } from "../tool.js";
import type { BackgroundProcesses, ProcessInfo } from "./background.js";
import { stoppedData } from "./background-run.js";

/**
 * The tools that work with the session's background processes: read what one printed since a
 * cursor, type into one that runs on a terminal, stop one, list them. Each is a call like any
 * other; reading is a read, typing and stopping act on a process (decided as shell calls are).
 */

/** Most bytes one process_output call returns. */
export const PROCESS_OUTPUT_MAX_BYTES = 16 * 1024;

const processId = once(() =>
  z.string().min(1).max(200).describe("The process_id the background shell call returned."),
);

export function createProcessTools(registry: BackgroundProcesses): AnyTool[] {
  return [outputTool(registry), inputTool(registry), stopTool(registry), listTool(registry)];
}

function known(registry: BackgroundProcesses, id: string): ProcessInfo {
  const info = registry.info(id);
  if (info === undefined)
    throw new ToolError("NOT_FOUND", `no background process ${id} in this session`, {
      hint: "process_list names the session's background processes.",
    });
  return info;
}

const outputInput = once(() =>
  z.strictObject({
    id: processId(),
    since: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("The cursor a previous process_output returned as next; default: the oldest output held."),
  }),
);

function outputTool(registry: BackgroundProcesses) {
  return defineTool<z.infer<ReturnType<typeof outputInput>>>({
    name: "process_output",
    version: "1",
    description: [
      "Read a background process's output (stdout and stderr interleaved) since a cursor.",
      `Returns at most ${PROCESS_OUTPUT_MAX_BYTES} bytes, the process's status, and next: pass it as since to read on.`,
      "Only the most recent output is held; the result says how many bytes were missed.",
    ].join(" "),
    get input() {
      return outputInput();
    },
    modelSchema: INPUT_SCHEMAS.process_output,
    effect: "read_only",
    idempotency: "idempotent",
    timeoutMs: 10_000,
    resources: () => ({ read: [], write: [] }),
    concurrencySafe: () => true,
    async execute(args) {
      known(registry, args.id);
      const read = registry.output(args.id, args.since, PROCESS_OUTPUT_MAX_BYTES)!;
      const { info } = read;
      const status =
        info.status === "running"
          ? "running"
          : `stopped (${info.reason}; exit ${info.exit ?? "none"}${info.signal ? `, signal ${info.signal}` : ""})`;
      const header = [
        `process_id: ${args.id}`,
        `status: ${status}`,
        `next: ${read.next}${read.next < info.output_bytes ? ` (more output follows: ${info.output_bytes - read.next} bytes)` : ""}`,
        ...(read.missed > 0 ? [`missed: ${read.missed} bytes were no longer held`] : []),
      ].join("\n");
      return {
        summary: `${args.id}: ${Buffer.byteLength(read.text)} bytes of output, ${info.status}`,
        content: `${header}\n${read.text.length > 0 ? read.text : "(no new output)"}`,
        data: {
          process_id: args.id,
          status: info.status,
          next: read.next,
          missed: read.missed,
          bytes: Buffer.byteLength(read.text),
        },
      };
    },
  });
}

const inputInput = once(() =>
  z.strictObject({
    id: processId(),
    text: z
      .string()
      .max(64 * 1024)
      .describe("Text to type (at most 64 KiB); include \\n to press Enter, \\u0003 for Ctrl-C."),
  }),
);

function inputTool(registry: BackgroundProcesses) {
  return defineTool<z.infer<ReturnType<typeof inputInput>>>({
    name: "process_input",
    version: "1",
    description:
      "Type text into a background process started with pty: true (answer a prompt, send a command). " +
      "Include \\n to press Enter. Then read the answer with process_output.",
    get input() {
      return inputInput();
    },
    modelSchema: INPUT_SCHEMAS.process_input,
    effect: "process_execution",
    idempotency: "non_idempotent",
    timeoutMs: 10_000,
    resources: () => ({ exclusive: true }),
    concurrencySafe: () => false,
    async execute(args) {
      known(registry, args.id);
      const outcome = registry.input(args.id, args.text);
      if (outcome === "not_pty")
        throw new ToolError("SEMANTIC_VALIDATION_ERROR", `${args.id} was not started with pty: true`, {
          hint: "Only a process on a terminal takes input; start it again with pty: true.",
        });
      if (outcome !== "written")
        throw new ToolError("PROCESS_ERROR", `${args.id} no longer runs; nothing was typed`, {
          hint: "process_output shows how it ended.",
        });
      const bytes = Buffer.byteLength(args.text);
      return {
        summary: `${args.id}: typed ${bytes} bytes`,
        content: `process_id: ${args.id}\nTyped ${bytes} bytes. Read the answer with process_output.`,
        data: { process_id: args.id, bytes },
      };
    },
  });
}

const stopInput = once(() => z.strictObject({ id: processId() }));

function stopTool(registry: BackgroundProcesses) {
  return defineTool<z.infer<ReturnType<typeof stopInput>>>({
    name: "process_stop",
    version: "1",
    description:
      "Stop a background process and every process it started (SIGTERM, then SIGKILL). " +
      "Returns how it ended and how many of its processes were still found afterwards (survivors, normally 0).",
    get input() {
      return stopInput();
    },
    modelSchema: INPUT_SCHEMAS.process_stop,
    effect: "process_execution",
    idempotency: "idempotent",
    timeoutMs: 30_000,
    resources: () => ({ exclusive: true }),
    concurrencySafe: () => false,
    async execute(args) {
      const before = known(registry, args.id);
      const stopped = (await registry.stop(args.id, "stopped"))!;
      const already = before.status === "stopped";
      const how = `${stopped.reason === "stopped" ? "stopped" : `ended (${stopped.reason})`}: exit ${stopped.exit ?? "none"}${stopped.signal ? `, signal ${stopped.signal}` : ""}, survivors ${stopped.survivors}`;
      return {
        summary: `${args.id} ${already ? "had already " : ""}${how}`,
        content: `process_id: ${args.id}\n${already ? "It had already " : ""}${how}.`,
        data: { process_id: args.id, ...stoppedData(stopped) },
      };
    },
  });
}

const listInput = once(() => z.strictObject({}));

function listTool(registry: BackgroundProcesses) {
  return defineTool<z.infer<ReturnType<typeof listInput>>>({
    name: "process_list",
    version: "1",
    description:
      "List the session's background processes: id, command, status, how long they are kept, output size.",
    get input() {
      return listInput();
    },
    modelSchema: INPUT_SCHEMAS.process_list,
    effect: "read_only",
    idempotency: "idempotent",
    timeoutMs: 10_000,
    resources: () => ({ read: [], write: [] }),
    concurrencySafe: () => true,
    async execute() {
      const all = registry.list();
      const lines = all.map(
        (p) =>
          `${p.process_id}\t${p.status}${p.reason ? ` (${p.reason})` : ""}\tkeep: ${p.keep}${p.ttl_ms ? `, ttl_ms ${p.ttl_ms}` : ""}\toutput: ${p.output_bytes} bytes\t${p.command.split("\n")[0]}`,
      );
      return {
        summary: `${all.filter((p) => p.status === "running").length} running, ${all.length} in all`,
        content: lines.length > 0 ? lines.join("\n") : "(no background processes)",
        data: {
          processes: all.map((p) => ({
            process_id: p.process_id,
            status: p.status,
            keep: p.keep,
            output_bytes: p.output_bytes,
          })),
        },
      };
    },
  });
}
