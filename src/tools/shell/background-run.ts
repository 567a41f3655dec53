import type { BackgroundRequest } from "../../sandbox/executor.js";
import { ToolError } from "../errors.js";
import type { ToolContext, ToolOutput } from "../tool.js";
import type { BackgroundProcesses } from "./background.js";
import type { ShellArgs, ShellRun } from "./shell.js";
import { traceEnvironment } from "./trace-env.js";

/**
 * `shell` with `background: true`: start the command through the executor like any shell call
 * (policy, sandbox profile, environment filter, scrubbing), hand it to the session's registry and
 * return once it is ready, with its process id. A process that exits first, or is not ready in
 * time, is stopped and the call fails with its output's tail.
 */

export interface BackgroundRun extends ShellRun {
  workspace: string;
  registry: BackgroundProcesses;
  argv: string[];
}

/** Default time a process may take to be ready when neither ready.timeout_ms nor timeout_ms says. */
const DEFAULT_READY_TIMEOUT_MS = 30_000;

export async function runBackground(
  args: ShellArgs,
  context: ToolContext,
  run: BackgroundRun,
): Promise<ToolOutput> {
  const { options } = run;
  const keep = args.keep ?? "turn";
  const request: Omit<BackgroundRequest, "onOutput"> = {
    argv: run.argv,
    workspace: run.workspace,
    profile: run.profile,
    artifacts: context.artifacts,
    ...(args.pty === true ? { pty: true } : {}),
  };
  // The process runs beside the session, under the span of the call that started it.
  const trace = traceEnvironment(context);
  if (trace !== undefined) request.extraEnv = trace;
  if (options.output !== undefined) request.capture = options.output;
  // The process's connections are decided and journaled as this call's, for as long as it runs.
  if (options.network !== undefined)
    request.egress = options.network(context.callId, new AbortController().signal);
  const outcome = await run.registry.start({
    callId: context.callId,
    command: args.command,
    keep,
    ...(args.ttl_ms !== undefined ? { ttlMs: args.ttl_ms } : {}),
    pty: args.pty === true,
    ...(args.ready !== undefined ? { ready: args.ready } : {}),
    readyTimeoutMs: args.timeout_ms ?? Math.min(DEFAULT_READY_TIMEOUT_MS, run.timeoutMs),
    signal: context.signal,
    launch: (onOutput) => run.executor.background({ ...request, onOutput }),
  });
  const tail = outcome.output.length > 0 ? `\noutput (last bytes):\n${outcome.output}` : "\n(no output)";
  if (outcome.kind !== "ready") {
    const { stopped } = outcome;
    const ended =
      outcome.kind === "exited"
        ? `exited before it was ready (exit ${stopped.exit ?? "none"}${stopped.signal ? `, signal ${stopped.signal}` : ""})`
        : outcome.kind === "timeout"
          ? "was not ready in time and was stopped"
          : "was cancelled and stopped";
    const data = { process_id: outcome.id, ...stoppedData(stopped) };
    const content = `process_id: ${outcome.id}\nThe background process ${ended}.${tail}`;
    const code =
      outcome.kind === "timeout" ? "TIMEOUT" : outcome.kind === "cancelled" ? "CANCELLED" : "PROCESS_ERROR";
    throw new ToolError(code, content, { data });
  }
  const readiness =
    outcome.by === "none" ? "started" : `ready after ${outcome.afterMs} ms (${readyText(args)})`;
  const lifetime = [
    keep === "session" ? "kept until the session ends" : "stopped at the end of this turn",
    ...(args.ttl_ms !== undefined ? [`or after ttl_ms ${args.ttl_ms}`] : []),
  ].join(" ");
  const content = [
    `process_id: ${outcome.id}`,
    `The background process ${readiness}; it is ${lifetime}.`,
    `Read its output with process_output${args.pty === true ? ", type into it with process_input" : ""}, stop it with process_stop.`,
  ].join("\n");
  return {
    summary: `background ${outcome.id} ${readiness}`,
    content: `${content}${tail}`,
    data: {
      process_id: outcome.id,
      background: true,
      keep,
      pty: args.pty === true,
      ready_by: outcome.by,
      ready_after_ms: outcome.afterMs,
      ...(args.ttl_ms !== undefined ? { ttl_ms: args.ttl_ms } : {}),
    },
  };
}

function readyText(args: ShellArgs): string {
  const ready = args.ready;
  if (ready === undefined) return "started";
  return "port" in ready ? `port ${ready.port} listens` : `output matched /${ready.log}/`;
}

/** What a stopped process's record says, as result data. */
export function stoppedData(stopped: {
  exit: number | null;
  signal: string | null;
  survivors: number;
  reason: string;
}): Record<string, string | number | null> {
  return { exit: stopped.exit, signal: stopped.signal, survivors: stopped.survivors, reason: stopped.reason };
}
