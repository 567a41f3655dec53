import { spawn } from "node:child_process";
import type { HookPoint } from "./hook-points.js";
import { type AdmitHook, type HookContext, HookFailure, type NotifyHook } from "./hooks.js";

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
  /** The environment to filter (the caller passes it; only safe names reach the hook). */
  env: Readonly<Record<string, string | undefined>>;
}

const MAX_STDOUT_BYTES = 64 * 1024;
const MAX_STDERR_BYTES = 16 * 1024;
/** After the leader exits, how long its pipes may stay open (an escaped grandchild) before we stop reading. */
const PIPE_DRAIN_MS = 1_000;

const PASSED_ENV = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TMPDIR",
  "TERM",
  "SHELL",
]);

/** Only locale and basic process variables: API keys and tokens never reach a hook. */
export function filterHookEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const filtered: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (PASSED_ENV.has(name) || name.startsWith("LC_"))) filtered[name] = value;
  }
  return filtered;
}

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
  if (context.result !== undefined) input.result = context.result;
  if (context.error !== undefined) input.error = context.error;
  return `${JSON.stringify(input)}\n`;
}

/**
 * An external command as a hook. Exit 0: stdout is the answer (`{"decision","reason"}` for
 * admit); exit 2: deny; any other exit, a signal, unparsable output or a timeout is a failure,
 * which denies an admit and is logged for notify. On timeout or cancellation the whole process
 * group is killed; it is also killed once the command exits, so no background child lingers.
 */
export function commandHook(spec: CommandHookSpec): NotifyHook | AdmitHook {
  const name = spec.name ?? `command:${spec.command.slice(0, 60)}`;
  const base = {
    name,
    point: spec.point,
    ...(spec.tools === undefined ? {} : { tools: spec.tools }),
    ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
  };
  const env = filterHookEnv(spec.env);
  const run = async (context: HookContext, signal: AbortSignal): Promise<unknown> => {
    const outcome = await runCommand(spec.command, spec.cwd, env, commandHookInput(context), signal);
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

function runCommand(
  command: string,
  cwd: string,
  env: Record<string, string>,
  stdin: string,
  signal: AbortSignal,
): Promise<CommandOutcome> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new HookFailure("cancelled before it started"));
      return;
    }
    const child = spawn("/bin/sh", ["-c", command], {
      cwd,
      env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let stdoutBytes = 0;
    let stderrBytes = 0;
    let overflow = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let done = false;

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const finish = (): void => {
      if (done || exit === undefined) return;
      done = true;
      clearTimeout(drainTimer);
      signal.removeEventListener("abort", onAbort);
      resolve({
        ...exit,
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr: Buffer.concat(stderr).toString("utf8"),
        overflow,
      });
    };
    const onAbort = (): void => killGroup();
    signal.addEventListener("abort", onAbort, { once: true });

    child.stdout.on("data", (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > MAX_STDOUT_BYTES) {
        overflow = true;
        killGroup();
      } else stdout.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderrBytes < MAX_STDERR_BYTES) stderr.push(chunk);
      stderrBytes += chunk.length;
    });
    child.stdin.on("error", () => {
      // The hook may exit without reading its input (EPIPE); its exit status still decides.
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      signal.removeEventListener("abort", onAbort);
      done = true;
      reject(new HookFailure(`could not start (${error.code ?? "spawn error"})`));
    });
    child.on("exit", (code, exitSignal) => {
      exit = { code, signal: exitSignal };
      killGroup();
      drainTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish();
      }, PIPE_DRAIN_MS);
    });
    child.on("close", finish);
    child.stdin.end(stdin);
  });
}
