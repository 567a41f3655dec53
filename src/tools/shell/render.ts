import type { Quarantined } from "../../sandbox/absent-guard.js";
import type { StreamSummary } from "../../sandbox/capture.js";
import type { Refusal } from "../../sandbox/denied-programs.js";
import type { ProcessResult } from "../../sandbox/process.js";
import type { SandboxProfile } from "../../sandbox/sandbox.js";
import type { JsonObject } from "../../shared/json.js";

export interface ShellRunFacts {
  result: ProcessResult;
  sandbox: SandboxProfile;
  timeoutMs: number;
  /** Set when the sandbox refused a write (see findSandboxViolation). */
  violation?: string;
  /** Denied programs the command tried to run, which the sandbox's stubs refused. */
  refused?: readonly Refusal[];
  /** Protected names the command created, moved to `.harness/quarantine/` after it ended. */
  quarantined?: readonly Quarantined[];
}

/** The structured result: what the journal keeps and what error data carries. */
export function shellData(facts: ShellRunFacts): JsonObject {
  const { result } = facts;
  const data: JsonObject = {
    outcome: result.outcome,
    exit_code: result.exitCode,
    signal: result.exitSignal,
    duration_ms: result.durationMs,
    timeout_ms: facts.timeoutMs,
    sandbox: facts.sandbox,
    killed_processes: result.killedProcesses,
    truncated: result.stdout.truncated || result.stderr.truncated,
    stdout: streamData(result.stdout),
    stderr: streamData(result.stderr),
  };
  if (facts.violation !== undefined) data.violation = facts.violation;
  if (facts.refused !== undefined && facts.refused.length > 0) {
    data.denied_programs = facts.refused.map((refusal) => ({ path: refusal.path, rule: refusal.rule }));
  }
  if (facts.quarantined !== undefined && facts.quarantined.length > 0) {
    data.quarantined = facts.quarantined.map((moved) => ({ path: moved.path, moved_to: moved.movedTo }));
  }
  return data;
}

function streamData(stream: StreamSummary): JsonObject {
  const data: JsonObject = {
    bytes: stream.bytes,
    lines: stream.lines,
    truncated: stream.truncated,
    omitted_bytes: stream.omittedBytes,
    head: stream.head,
    tail: stream.tail,
    artifact: stream.artifact === null ? null : { ...stream.artifact },
  };
  if (stream.artifactError !== undefined) data.artifact_error = stream.artifactError;
  return data;
}

/** One line for humans and traces. */
export function shellSummary(facts: ShellRunFacts, label: string): string {
  const { result } = facts;
  const ending =
    result.outcome === "timeout"
      ? `timed out after ${facts.timeoutMs} ms`
      : result.outcome === "cancelled"
        ? "cancelled"
        : result.exitSignal !== null
          ? `killed by ${result.exitSignal}`
          : `exit ${result.exitCode}`;
  return `${label}: ${ending} in ${result.durationMs} ms (${result.stdout.bytes} B stdout, ${result.stderr.bytes} B stderr)`;
}

/** The text the model reads: status line, then a head+tail preview of each stream. */
export function shellContent(facts: ShellRunFacts): string {
  const { result } = facts;
  const lines: string[] = [];
  const status =
    result.outcome === "timeout"
      ? `timed out after ${facts.timeoutMs} ms; the command and its processes were killed`
      : result.outcome === "cancelled"
        ? "cancelled; the command and its processes were killed"
        : result.exitSignal !== null
          ? `killed by signal ${result.exitSignal}`
          : `exit code ${result.exitCode}`;
  lines.push(`${status} (${result.durationMs} ms, sandbox: ${facts.sandbox})`);
  if (facts.violation !== undefined) lines.push(`the sandbox refused a write: ${facts.violation}`);
  for (const refusal of facts.refused ?? []) {
    lines.push(
      `the sandbox refused to run ${refusal.path}: the rule ${refusal.rule} denies it (it exited 126 without running)`,
    );
  }
  for (const moved of facts.quarantined ?? []) {
    lines.push(
      `the command created the protected path ${moved.path}; it was moved to ${moved.movedTo} (protected paths may not be created)`,
    );
  }
  if (result.outcome === "exited" && result.killedProcesses > 0) {
    lines.push(
      `${plural(result.killedProcesses, "background process", "background processes")} still running at exit were killed`,
    );
  }
  lines.push(...streamText("stdout", result.stdout), ...streamText("stderr", result.stderr));
  return lines.join("\n");
}

function streamText(name: string, stream: StreamSummary): string[] {
  if (stream.bytes === 0) return [`${name}: (empty)`];
  const size = `${stream.bytes} bytes, ${plural(stream.lines, "line", "lines")}`;
  if (!stream.truncated) return [`${name} (${size}):`, stream.head];
  const where =
    stream.artifact !== null ? `full output in artifact ${stream.artifact.id}` : "full output was not stored";
  return [
    `${name} (${size}; showing the first and last bytes, ${where}):`,
    stream.head,
    `[... ${stream.omittedBytes} bytes omitted ...]`,
    stream.tail,
  ];
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}
