import { realpath } from "node:fs/promises";
import { z } from "zod";
import type { CaptureLimits } from "../../sandbox/capture.js";
import { createSandbox } from "../../sandbox/create.js";
import { NetworkUnavailableError } from "../../sandbox/egress-bridge.js";
import type { NetworkAccess } from "../../sandbox/executor.js";
import {
  type ExecuteRequest,
  type ExecuteResult,
  Executor,
  type ProcessProfile,
  type SpawnReport,
} from "../../sandbox/executor.js";
import { SpawnError } from "../../sandbox/process.js";
import { type Sandbox, type SandboxConfig, SandboxUnavailableError } from "../../sandbox/sandbox.js";
import { findSandboxViolation } from "../../sandbox/violation.js";
import { once } from "../../shared/lazy-record.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { defineTool, type ToolContext, type ToolDefinition, type ToolOutput } from "../tool.js";
import type { BackgroundProcesses } from "./background.js";
import { runBackground } from "./background-run.js";
import { LiveOutput } from "./live-output.js";
import { locateShell } from "./locate.js";
import { type ShellRunFacts, shellContent, shellData, shellSummary } from "./render.js";
import { traceEnvironment } from "./trace-env.js";

/** Linux refuses a single argument longer than this (MAX_ARG_STRLEN), so `bash -c` would fail. */
const MAX_COMMAND_BYTES = 128 * 1024 - 1;

const shellInput = once(() =>
  z.strictObject({
    command: z.string().min(1).max(MAX_COMMAND_BYTES).describe("The bash command line to run."),
    timeout_ms: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("Time limit in milliseconds; when it passes, the command and all its processes are killed."),
    description: z.string().max(200).optional().describe("A few words on what the command is for."),
    background: z
      .boolean()
      .optional()
      .describe(
        "Run the command in the background (a dev server, a watcher): the call returns a process_id once it is ready; read its output with process_output, stop it with process_stop.",
      ),
    ready: z
      .union([
        z.strictObject({
          port: z.number().int().min(1).max(65535).describe("Ready once a TCP port listens."),
          timeout_ms: z.number().int().positive().optional(),
        }),
        z.strictObject({
          log: z.string().min(1).max(1000).describe("Ready once the output matches this regular expression."),
          timeout_ms: z.number().int().positive().optional(),
        }),
      ])
      .optional()
      .describe("background only: when the process counts as ready (default: as soon as it started)."),
    ttl_ms: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("background only: the process and all it started are killed after this many milliseconds."),
    pty: z.boolean().optional().describe("background only: run it on a pseudo-terminal (for process_input)."),
    keep: z
      .enum(["turn", "session"])
      .optional()
      .describe('background only: stopped at the end of the turn (default "turn"), or kept for the session.'),
  }),
);

export type ShellArgs = z.infer<ReturnType<typeof shellInput>>;

/** What the engine learns when a command's process group exists, before the tool waits on it. */
export interface ShellSpawnInfo extends SpawnReport {
  callId: string;
}

export interface ShellToolOptions {
  /** The OS sandbox: a configuration, or a ready instance (e.g. shared with acceptance checks). */
  sandbox: SandboxConfig | Sandbox;
  /** Used when a call gives no timeout_ms. Default 120 000 (or maxTimeoutMs when lower). */
  defaultTimeoutMs?: number;
  /** The largest timeout_ms a call may ask for. Default 600 000. */
  maxTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL when the process tree is terminated. Default 2000. */
  killGraceMs?: number;
  /** Extra environment variable names to pass (credential-like names are still dropped). */
  allowEnv?: readonly string[];
  /** Names passed even when they look like credentials: the user's explicit choice. */
  passEnv?: readonly string[];
  /** Bytes of head and tail kept per stream for the preview. Default 8 KiB each. */
  output?: CaptureLimits;
  /**
   * Called once the command's process group exists, before the tool waits on it. The engine
   * journals it so that, after a crash of harness, it can call killSurvivors(info) on resume
   * for any spawn without a recorded result. If it throws, the command is killed and the call
   * fails with RUNTIME_EXCEPTION.
   */
  onSpawn?: (info: ShellSpawnInfo) => void | Promise<void>;
  /** Where the environment is taken from. Default process.env. Ignored when `executor` is given. */
  environment?: Readonly<Record<string, string | undefined>>;
  /** The executor that starts every process (shared with acceptance checks and hooks). */
  executor?: Executor;
  /**
   * Why no command may run in this session (e.g. a read-only run without a sandbox to enforce
   * it). Every call is then denied with this reason, and nothing is started.
   */
  refusal?: string;
  /**
   * Network `policy`: the access of one call (its own proxy, its connections decided by the
   * `net(...)` rules and journaled with its id). Absent: commands have no network.
   */
  network?: (callId: string, signal: AbortSignal) => NetworkAccess;
  /** The session's background processes; absent: `background: true` is refused. */
  background?: BackgroundProcesses;
}

export function createShellTool(options: ShellToolOptions): ToolDefinition<ShellArgs> {
  const sandbox = "ensureAvailable" in options.sandbox ? options.sandbox : createSandbox(options.sandbox);
  const executor =
    options.executor ??
    new Executor(options.environment === undefined ? {} : { environment: options.environment });
  const profile: ProcessProfile = {
    sandbox,
    env: {
      ...(options.allowEnv ? { allow: options.allowEnv } : {}),
      ...(options.passEnv ? { pass: options.passEnv } : {}),
    },
  };
  const maxTimeoutMs = options.maxTimeoutMs ?? 600_000;
  const defaultTimeoutMs = options.defaultTimeoutMs ?? Math.min(120_000, maxTimeoutMs);
  const killGraceMs = options.killGraceMs ?? 2_000;
  if (!(defaultTimeoutMs > 0 && defaultTimeoutMs <= maxTimeoutMs)) {
    throw new RangeError("defaultTimeoutMs must be positive and at most maxTimeoutMs");
  }

  return defineTool<ShellArgs>({
    name: "shell",
    version: "1",
    description: describeTool(
      sandbox,
      defaultTimeoutMs,
      maxTimeoutMs,
      options.refusal,
      options.network !== undefined,
    ),
    get input() {
      return shellInput();
    },
    modelSchema: INPUT_SCHEMAS.shell,
    effect: "process_execution",
    idempotency: "non_idempotent",
    // The tool enforces its own limit; leave room for the kill grace period and output draining.
    timeoutMs: maxTimeoutMs + killGraceMs + 10_000,
    resources: () => ({ exclusive: true }),
    concurrencySafe: () => false,
    validate(args) {
      if (args.timeout_ms !== undefined && args.timeout_ms > maxTimeoutMs) {
        throw new ToolError(
          "SEMANTIC_VALIDATION_ERROR",
          `timeout_ms ${args.timeout_ms} is above the limit of ${maxTimeoutMs} ms`,
          { hint: `Use a timeout_ms of at most ${maxTimeoutMs}, or split the work.` },
        );
      }
      if (Buffer.byteLength(args.command) > MAX_COMMAND_BYTES) {
        throw new ToolError("SEMANTIC_VALIDATION_ERROR", "command is longer than 128 KiB", {
          hint: "Write long scripts to a file first, then run the file.",
        });
      }
      if (args.command.includes("\0")) {
        throw new ToolError("SEMANTIC_VALIDATION_ERROR", "command contains a NUL character");
      }
      validateBackground(args, maxTimeoutMs);
    },
    // What an approver must see: the exact command, where it runs, for how long, and how confined.
    approvalDetails: (args) => ({
      command: args.command,
      ...(args.background === true ? { background: true, keep: args.keep ?? "turn" } : {}),
      cwd: ". (the workspace root)",
      timeoutMs: args.timeout_ms ?? defaultTimeoutMs,
      sandbox: sandbox.profile,
    }),
    execute: (args, context) =>
      runShell(args, context, {
        sandbox,
        executor,
        profile,
        timeoutMs: args.timeout_ms ?? defaultTimeoutMs,
        killGraceMs,
        options,
      }),
  });
}

export interface ShellRun {
  sandbox: Sandbox;
  executor: Executor;
  profile: ProcessProfile;
  timeoutMs: number;
  killGraceMs: number;
  options: ShellToolOptions;
}

/** The background-only arguments make sense only with `background: true`, and a readable pattern. */
function validateBackground(args: ShellArgs, maxTimeoutMs: number): void {
  const extras = (["ready", "ttl_ms", "pty", "keep"] as const).filter((name) => args[name] !== undefined);
  if (args.background !== true) {
    if (extras.length > 0)
      throw new ToolError("SEMANTIC_VALIDATION_ERROR", `${extras.join(", ")} need background: true`);
    return;
  }
  const readyTimeout = args.ready?.timeout_ms;
  if (readyTimeout !== undefined && readyTimeout > maxTimeoutMs)
    throw new ToolError(
      "SEMANTIC_VALIDATION_ERROR",
      `ready.timeout_ms is above the limit of ${maxTimeoutMs} ms`,
    );
  if (args.ready !== undefined && "log" in args.ready) {
    try {
      new RegExp(args.ready.log, "m");
    } catch {
      throw new ToolError("SEMANTIC_VALIDATION_ERROR", "ready.log is not a valid regular expression");
    }
  }
}

async function runShell(args: ShellArgs, context: ToolContext, run: ShellRun): Promise<ToolOutput> {
  if (context.hostRoot === undefined) {
    throw new ToolError(
      "RUNTIME_EXCEPTION",
      "shell needs an on-disk workspace; this session's workspace is not a directory",
    );
  }
  if (run.options.refusal !== undefined) throw new ToolError("POLICY_DENIED", run.options.refusal);
  if (context.signal.aborted) throw new ToolError("CANCELLED", "cancelled before the command started");

  const { sandbox, options } = run;
  const workspace = await realpath(context.hostRoot).catch(() => {
    throw new ToolError("RUNTIME_EXCEPTION", "the workspace directory is not accessible");
  });
  if (args.background === true) {
    if (options.background === undefined)
      throw new ToolError("RUNTIME_EXCEPTION", "background processes are not available in this session");
    return runBackground(args, context, {
      ...run,
      workspace,
      registry: options.background,
      argv: [locateShell(run.executor.environment.PATH), "-c", args.command],
    }).catch((error: unknown) => {
      if (error instanceof SandboxUnavailableError) throw unavailable(error, sandbox);
      if (error instanceof NetworkUnavailableError)
        throw new ToolError("RUNTIME_EXCEPTION", `${error.message}. The command was not run.`);
      if (error instanceof SpawnError)
        throw new ToolError(
          "RUNTIME_EXCEPTION",
          `the shell could not be started (${error.code ?? "unknown error"})`,
        );
      throw error;
    });
  }
  const request: ExecuteRequest = {
    purpose: "shell",
    argv: [locateShell(run.executor.environment.PATH), "-c", args.command],
    workspace,
    profile: run.profile,
    timeoutMs: run.timeoutMs,
    signal: context.signal,
    killGraceMs: run.killGraceMs,
    artifacts: context.artifacts,
  };
  if (options.output !== undefined) request.capture = options.output;
  if (options.network !== undefined) request.egress = options.network(context.callId, context.signal);
  const trace = traceEnvironment(context);
  if (trace !== undefined) request.extraEnv = trace;
  const onSpawn = options.onSpawn;
  let spawnNotRecorded = false;
  if (onSpawn !== undefined) {
    request.onSpawn = async (report) => {
      try {
        await onSpawn({ ...report, callId: context.callId });
      } catch (error) {
        spawnNotRecorded = true;
        throw error;
      }
    };
  }

  const live = context.output === undefined ? undefined : new LiveOutput(context.output);
  if (live !== undefined) request.onOutput = (stream, bytes) => live.write(stream, bytes);

  let result: ExecuteResult;
  try {
    result = await run.executor.execute(request).finally(() => live?.close());
  } catch (error) {
    if (error instanceof SandboxUnavailableError) throw unavailable(error, sandbox);
    if (error instanceof NetworkUnavailableError) {
      throw new ToolError("RUNTIME_EXCEPTION", `${error.message}. The command was not run.`);
    }
    if (error instanceof SpawnError) {
      throw new ToolError(
        "RUNTIME_EXCEPTION",
        `the shell could not be started (${error.code ?? "unknown error"})`,
      );
    }
    if (spawnNotRecorded) {
      throw new ToolError(
        "RUNTIME_EXCEPTION",
        "the command was killed because its start could not be recorded",
      );
    }
    throw error;
  }

  const facts: ShellRunFacts = { result, sandbox: sandbox.profile, timeoutMs: run.timeoutMs };
  if (result.refused !== undefined) facts.refused = result.refused;
  if (result.quarantined !== undefined) facts.quarantined = result.quarantined;
  const quarantined = (facts.quarantined?.length ?? 0) > 0;
  const failed =
    quarantined || (result.outcome === "exited" && (result.exitCode !== 0 || result.exitSignal !== null));
  if (failed) {
    const stderrText = `${result.stderr.head}\n${result.stderr.tail}`;
    const violation = await findSandboxViolation(stderrText, sandbox, workspace);
    if (violation !== undefined) facts.violation = violation;
  }
  const label = args.description ?? firstLine(args.command);
  const output = {
    summary: shellSummary(facts, label),
    content: shellContent(facts),
    data: shellData(facts),
  };
  if (result.outcome === "timeout") throw failure("TIMEOUT", output);
  if (result.outcome === "cancelled") throw failure("CANCELLED", output);
  const refusedRun = facts.violation !== undefined || (facts.refused?.length ?? 0) > 0 || quarantined;
  if (failed) throw failure(refusedRun ? "SANDBOX_VIOLATION" : "PROCESS_ERROR", output);
  return output;
}

function unavailable(error: SandboxUnavailableError, sandbox: Sandbox): ToolError {
  return new ToolError(
    "SANDBOX_UNAVAILABLE",
    `${error.message}. The command was not run. ` +
      (error.code === "not_found"
        ? "To enable the sandbox, install bubblewrap (e.g. `apt-get install bubblewrap`). "
        : "") +
      `To run commands without a sandbox, the user can opt out ` +
      `with \`--sandbox off\` on the command line or \`"sandbox": "off"\` in the config.`,
    { data: { reason: error.code, sandbox: sandbox.profile } },
  );
}

/** A ToolError whose message is the whole observation: a failing command is a normal result. */
function failure(
  code: "TIMEOUT" | "CANCELLED" | "PROCESS_ERROR" | "SANDBOX_VIOLATION",
  output: { summary: string; content: string; data: Record<string, unknown> },
): ToolError {
  return new ToolError(code, output.content, { data: output.data });
}

function firstLine(command: string): string {
  const line = command.trimStart().split("\n")[0] ?? "";
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

function describeTool(
  sandbox: Sandbox,
  defaultTimeoutMs: number,
  maxTimeoutMs: number,
  refusal: string | undefined,
  network = false,
): string {
  if (refusal !== undefined)
    return `Run a bash command line in the workspace. Not available in this session: ${refusal}`;
  const isolation =
    sandbox.profile === "workspace-write"
      ? "It runs in a sandbox: the workspace is writable except protected paths (.harness/, every .git, " +
        "harness.config.json, hook scripts: read-only, so git can read history but not commit), system " +
        "toolchains are read-only, HOME and /tmp are private and empty, and there is no network access" +
        (network ? " except through the proxy below." : ".")
      : sandbox.profile === "read-only"
        ? `It runs in a read-only sandbox: nothing can be written except the private /tmp, and there is no network access${network ? " except through the proxy below" : ""}.`
        : "It runs without a sandbox, as the harness user.";
  return [
    "Run a bash command line in the workspace root and return its exit code and output.",
    isolation,
    ...(network
      ? [
          "Network: HTTP_PROXY/HTTPS_PROXY point at a proxy that lets through only hosts the user's net(...) rules allow (others get 403 with the reason); a client that ignores the proxy variables reaches nothing. Every connection is recorded.",
        ]
      : []),
    "stdin is closed; interactive commands get end-of-file. Only a few environment variables are passed; credentials are not.",
    `The command is killed, with every process it started, after timeout_ms (default ${defaultTimeoutMs}, at most ${maxTimeoutMs}). ` +
      'Processes a command leaves behind (`&`, nohup) are killed when it exits. For a server or a watcher that must keep running, use background: true (with ready: {port} or {log: REGEX}); it is stopped at the end of the turn unless keep is "session", at ttl_ms, or with process_stop.',
    "Output is previewed as its first and last 8 KiB per stream; the full output is stored as an artifact.",
    "A non-zero exit is reported as an error with the output; read it and fix the cause.",
  ].join("\n");
}
