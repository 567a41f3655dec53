import { realpathSync } from "node:fs";
import type { HookPoint } from "../runtime/hook-points.js";
import type { HookContext } from "../runtime/ports.js";
import { NetworkUnavailableError } from "../sandbox/egress-bridge.js";
import type { Executor, NetworkAccess, ProcessProfile, SpawnReport } from "../sandbox/executor.js";
import { SpawnError } from "../sandbox/process.js";
import { SandboxUnavailableError } from "../sandbox/sandbox.js";
import { pathOutside } from "../tools/shell/locate.js";
import { type AdmitHook, HookFailure, type NotifyHook } from "./hooks.js";

export interface CommandHookSpec {
  kind: "notify" | "admit";
  point: HookPoint;
  /** Run as `/bin/sh -c COMMAND`. */
  command: string;
  name?: string;
  tools?: readonly string[];
  timeoutMs?: number;
  /** Absolute workspace root: the command's working directory. */
  cwd: string;
  /** Starts the process: filtered environment, sandbox, process tree, secret scrubbing. */
  executor: Executor;
  /** How the hook is confined and which variables it sees (the user config decides). */
  profile: ProcessProfile;
  /** Called once the hook's process exists, so the session can journal what it runs under. */
  onSpawn?: (report: SpawnReport & { callId: string }) => void | Promise<void>;
  /**
   * The hook's network (a definition with `"network": true`): asked at each run for access of
   * its own under the id of the call it runs for, in the session that call belongs to (a
   * sub-agent's calls run its parent's hooks). Undefined access (network `off`, a session it
   * does not know), or no `network` at all: the sandbox has no network.
   */
  network?: HookNetwork;
}

/** Network access for one run of hook `hook` for call `callId` of `session`; undefined: none. */
export type HookNetwork = (
  callId: string,
  hook: string,
  signal: AbortSignal,
  session: string,
) => NetworkAccess | undefined;

const MAX_STDOUT_BYTES = 64 * 1024;
/**
 * Bytes kept per stream: stdout whole up to the limit, plus one byte to tell an overflow; stderr
 * is only read for its first line (a deny reason), under the same bound.
 */
const CAPTURE_BYTES = MAX_STDOUT_BYTES + 1;
/** The runner's own timeout aborts the hook; this backstop only matters for a caller without one. */
const BACKSTOP_TIMEOUT_MS = 10 * 60_000;
/** After the leader exits, how long its pipes may stay open (an escaped grandchild) before we stop reading. */
const PIPE_DRAIN_MS = 1_000;

/** The JSON a command hook reads on stdin. */
export function commandHookInput(context: HookContext): string {
  const input: Record<string, unknown> = {
    point: context.point,
    session: context.session,
    call_id: context.callId,
    tool: context.tool,
    arguments: context.arguments,
    effect: context.effect,
  };
  if (context.status !== undefined) input.status = context.status;
  return `${JSON.stringify(input)}\n`;
}

/**
 * An external command as a hook. Exit 0: stdout is the answer (`{"decision","reason"}` for
 * admit); exit 2: deny; any other exit, a signal, unparsable output or a timeout is a failure,
 * which denies an admit and is logged for notify. It runs through the executor like every other
 * process: sandboxed by its profile, filtered environment, and its whole process tree killed on
 * timeout, cancellation, or once the command exits, so no background child lingers.
 */
export function commandHook(spec: CommandHookSpec): NotifyHook | AdmitHook {
  const name = spec.name ?? `command:${spec.command.slice(0, 60)}`;
  const base = {
    name,
    point: spec.point,
    ...(spec.tools === undefined ? {} : { tools: spec.tools }),
    ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
  };
  const run = async (context: HookContext, signal: AbortSignal): Promise<unknown> => {
    const outcome = await runCommand(spec, name, context, signal);
    return interpret(spec.kind, outcome);
  };
  return spec.kind === "admit" ? { ...base, kind: "admit", run } : { ...base, kind: "notify", run };
}

interface CommandOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  overflow: boolean;
}

function interpret(kind: "notify" | "admit", outcome: CommandOutcome): unknown {
  if (outcome.overflow) throw new HookFailure(`wrote more than ${MAX_STDOUT_BYTES} bytes to stdout`);
  if (outcome.code === 2) {
    if (kind === "notify") throw new HookFailure("exited with status 2");
    const reason = firstLine(outcome.stderr);
    return { decision: "deny", reason: reason === "" ? "the hook exited with status 2" : reason };
  }
  if (outcome.code !== 0) {
    throw new HookFailure(
      outcome.code === null
        ? `killed by ${outcome.signal ?? "a signal"}`
        : `exited with status ${outcome.code}`,
    );
  }
  if (kind === "notify") return undefined;
  try {
    return JSON.parse(outcome.stdout) as unknown;
  } catch {
    throw new HookFailure("exited 0 but stdout is not a JSON answer");
  }
}

function firstLine(text: string): string {
  return (text.split("\n").find((line) => line.trim() !== "") ?? "").trim().slice(0, 500);
}

async function runCommand(
  spec: CommandHookSpec,
  name: string,
  context: HookContext,
  signal: AbortSignal,
): Promise<CommandOutcome> {
  if (signal.aborted) throw new HookFailure("cancelled before it started");
  const onSpawn = spec.onSpawn;
  // Unsandboxed, `sh -c` would find a bare program name in a PATH directory the model can write
  // (an activated .venv/bin inside the workspace): the hook would run the model's program.
  const path = spec.executor.environment.PATH;
  const hostPath =
    spec.profile.sandbox.isolating || path === undefined
      ? undefined
      : pathOutside(path, realpathSync(spec.cwd));
  // A proxy of its own for this run, only in a sandbox: an unsandboxed hook (the user's
  // `"sandbox": "off"`) has the host's network anyway, and nothing could hold it to a proxy.
  const egress = spec.profile.sandbox.isolating
    ? spec.network?.(context.callId, name, signal, context.session)
    : undefined;
  try {
    const result = await spec.executor.execute({
      purpose: "hook",
      argv: ["/bin/sh", "-c", spec.command],
      workspace: spec.cwd,
      profile: spec.profile,
      timeoutMs: BACKSTOP_TIMEOUT_MS,
      // A hook is a quick check: it gets no grace period to clean up.
      killGraceMs: 0,
      drainMs: PIPE_DRAIN_MS,
      signal,
      stdin: commandHookInput(context),
      capture: { headBytes: CAPTURE_BYTES, tailBytes: 0 },
      ...(hostPath !== undefined ? { extraEnv: { PATH: hostPath } } : {}),
      ...(egress !== undefined ? { egress } : {}),
      ...(onSpawn
        ? { onSpawn: (report: SpawnReport) => onSpawn({ ...report, callId: context.callId }) }
        : {}),
    });
    if (result.outcome === "cancelled") throw new HookFailure("cancelled");
    if (result.outcome === "timeout") throw new HookFailure("timed out");
    return {
      code: result.exitCode,
      signal: result.exitSignal,
      stdout: result.stdout.head,
      stderr: result.stderr.head,
      overflow: result.stdout.bytes > MAX_STDOUT_BYTES,
    };
  } catch (error) {
    if (error instanceof HookFailure) throw error;
    if (error instanceof SandboxUnavailableError)
      throw new HookFailure(`could not start (sandbox unavailable)`);
    // Its proxy could not start: the hook does not run rather than run without its rules.
    if (error instanceof NetworkUnavailableError)
      throw new HookFailure(`could not start (network unavailable: ${error.message})`);
    if (error instanceof SpawnError)
      throw new HookFailure(`could not start (${error.code ?? "spawn error"})`);
    throw error;
  }
}
