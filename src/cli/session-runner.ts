import { join } from "node:path";
import type { RunSummary } from "../engine/options.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import { liveExport, withLiveExport } from "../otel/enabled.js";
import { costUsd, formatCost } from "../providers/cost.js";
import type { ProviderIdentity } from "../providers/provider.js";
import type { SessionRun } from "../session/engine-options.js";
import { EngineSession, type Turn } from "../session/handle.js";
import { harnessVersion } from "../session/version.js";
import type { OpenedWorkspace } from "../session/workspace.js";
import { escapeForTerminal, escapeLines } from "../shared/terminal-text.js";
import { traceMark } from "../shared/trace-startup.js";
import { CallShow } from "./call-show.js";
import { exitCodeFor } from "./exit-codes.js";
import { continueCommand, nextSteps, resumeCommand, withWorkspace } from "./next-steps.js";
import { stderrNotices } from "./notices.js";
import { output } from "./output.js";
import { createProgress, MODEL_TEXT_PREFIX } from "./progress.js";
import { TerminalSteering } from "./run-steering.js";
import { colorEnabled, createStyle, type Style } from "./style.js";

/** A session as `harness run` runs it: the session, and how this command line shows and repeats it. */
export interface CliRun extends SessionRun {
  json: boolean;
  events: boolean;
  /** Show each finished call's diff and command output on stderr (not with --quiet-calls or -q). */
  showCalls?: boolean;
  /** What a printed command for a new run repeats (every flag of this one, recorded or not). */
  rerunFlags?: string[][];
  /** What a printed command that continues the session repeats (run.ts `unrecordedFlags`, next-steps.ts). */
  unrecordedFlags?: string[][];
}

/**
 * Run a session with the CLI's conventions: progress on stderr, `--events` NDJSON or one
 * `--json` summary on stdout, SIGINT/SIGTERM stop at the next boundary (a second SIGINT exits
 * at once; every journal append is already whole and fsynced).
 */
export async function runSession(given: CliRun): Promise<number> {
  const run: CliRun = { notify: stderrNotices, ...given };
  const controller = new AbortController();
  // On a terminal a person is watching: typed lines steer, Ctrl-C interrupts the turn.
  const steering =
    process.stdin.isTTY === true && run.compactOnly === undefined
      ? new TerminalSteering(process.stdin, process.stderr)
      : undefined;
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts += 1;
    if (interrupts > 1 && signal === "SIGINT") {
      process.stderr.write("\nharness: second interrupt, exiting now (the journal is consistent)\n");
      turn?.exitNow();
      process.exit(130);
    }
    if (steering !== undefined && signal === "SIGINT" && turn !== undefined) {
      // The turn stops at the next safe point; the session stays open for its next prompt.
      process.stderr.write(
        "\nharness: interrupting the turn at the next safe point; the session stays open " +
          `(next: ${continueCommand(run.sessionId, run.workspace, run.unrecordedFlags)}); Ctrl-C again exits now\n`,
      );
      turn.interrupt();
      return;
    }
    process.stderr.write(
      `\nharness: ${signal} received, stopping at the next safe point (Ctrl-C again to exit now)\n`,
    );
    controller.abort(signal);
  };
  let turn: Turn | undefined;
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const style = createStyle(colorEnabled(process.stderr));
  const progress = createProgress({
    err: process.stderr,
    out: process.stdout,
    style,
    events: run.events,
    quiet: output.quiet,
    ...(run.showCalls === true && !output.quiet
      ? { show: callShow(run.workspace, run.sessionId, style) }
      : {}),
  });
  const connection = watchConnection(run.setup.provider.identity, style);
  // OpenTelemetry, only when an endpoint is configured (the SDK is not even loaded otherwise).
  const live = await liveExport(run.sessionId, harnessVersion());
  const listener = withLiveExport(
    {
      ...progress,
      record(record: AnyRecord) {
        traceMark(`record ${record.seq} ${record.type}`);
        connection.record(record);
        progress.record?.(record);
      },
    },
    live,
  );
  const started = performance.now();
  try {
    // A run from the command line: an agent that could change nothing has not done its task.
    const setup = steering ? { ...run.setup, approver: steering.wrap(run.setup.approver) } : run.setup;
    const session = new EngineSession({ ...run, setup, changesDeniedStops: true }, run.mode !== "new", {
      signal: controller.signal,
      listener,
    });
    // Acceptance commands run when the model is done: their sandbox is made ready meanwhile.
    if (run.acceptance.length > 0 && run.compactOnly === undefined) run.setup.warmAcceptance?.();
    const current = session.start(run);
    turn = current;
    steering?.start((text) => current.steer(text));
    traceMark("run: engine starting");
    const summary = await current.done;
    traceMark("run: engine done");
    if (run.compactOnly && summary.compacted) return printCompacted(summary, run);
    printSummary(summary, run, style, {
      duration_ms: Math.round(performance.now() - started),
      next: nextSteps(summary, run.workspace, connection.failed(), {
        ...(run.rerunFlags ? { rerun: run.rerunFlags } : {}),
        ...(run.unrecordedFlags ? { unrecorded: run.unrecordedFlags } : {}),
        // A new run is given this turn's prompt (the goal of a one-turn session).
        ...(run.input !== undefined ? { goal: run.input } : run.goal !== undefined ? { goal: run.goal } : {}),
      }),
    });
    return exitCodeFor(summary.status);
  } finally {
    steering?.close();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    // The session's MCP servers (whole process trees) end with it, on any outcome.
    await run.setup.mcp?.close();
    // Its network namespace too, with any process still in it.
    await run.setup.sessionNetwork?.close();
    await live?.shutdown();
    traceMark("run: session closed");
  }
}

/** What a run shows of its finished calls: read from this session's artifacts and its workspace. */
export function callShow(
  workspace: OpenedWorkspace,
  sessionId: string | (() => string),
  style: Style,
  options: { output?: boolean } = {},
): CallShow {
  return new CallShow(
    {
      root: workspace.root,
      harnessDir: workspace.harnessDir,
      sessionId: typeof sessionId === "string" ? () => sessionId : sessionId,
      artifactsDir: (id) => join(workspace.sessionDir(id), "artifacts"),
    },
    style,
    options.output ?? true,
  );
}

/** harness compact succeeded: the session is as it was, with its older turns now summarized. */
function printCompacted(summary: RunSummary, run: CliRun): number {
  const compacted = summary.compacted;
  if (run.json) {
    process.stdout.write(
      `${JSON.stringify({ session: summary.session, workspace: run.workspace.root, compacted })}\n`,
    );
  } else if (compacted) {
    process.stdout.write(
      `compacted session ${summary.session}: ${compacted.replaced_messages} messages replaced by a summary ` +
        `(about ${compacted.tokens_before} -> ${compacted.tokens_after} tokens); continue with: ${resumeCommand(summary.session, run.workspace, run.unrecordedFlags)}\n`,
    );
  }
  return 0;
}

/**
 * A model request that could not reach the server says so once, naming the address it tried
 * (retries follow; the run may end for another reason, e.g. the retries use up the budget).
 */
function watchConnection(identity: ProviderIdentity, style: Style) {
  let failed = false;
  return {
    failed: () => failed,
    record(record: AnyRecord) {
      if (failed || (record.type !== "model.retryable_error" && record.type !== "model.failed")) return;
      if (record.data.code !== "TRANSPORT") return;
      failed = true;
      const url =
        typeof identity.base_url === "string" && identity.base_url !== "" ? identity.base_url : undefined;
      process.stderr.write(
        style.yellow(
          `harness: cannot connect to ${url === undefined ? `the ${identity.kind} API` : escapeForTerminal(url)}: ` +
            `is the server running? (its address: --base-url or the profile's base_url)\n`,
        ),
      );
    },
  };
}

/** What this invocation adds to the session's own counts: its wall-clock time and the next commands. */
interface RunEnd {
  duration_ms: number;
  next: string[];
}

/**
 * Counts (requests, tool calls, events, tokens) are the session's totals, folded from its journal
 * (the same fold inspect uses, so the two agree); the duration is this invocation's.
 */
function tokenLine(usage: RunSummary["usage"]): string {
  const cache =
    usage.cached_tokens > 0 || usage.cache_write_tokens > 0
      ? ` (cache: ${usage.cached_tokens} read, ${usage.cache_write_tokens} written)`
      : "";
  const reasoning = usage.reasoning_tokens > 0 ? ` (${usage.reasoning_tokens} reasoning)` : "";
  return `${usage.input_tokens} in${cache}, ${usage.output_tokens} out${reasoning}`;
}

function printSummary(
  summary: RunSummary,
  run: CliRun,
  style: ReturnType<typeof createStyle>,
  end: RunEnd,
): void {
  const prices = run.setup.prices;
  const cost = prices === undefined ? undefined : costUsd(summary.usage, prices);
  if (run.json) {
    const { usage, tokens, ...rest } = summary;
    process.stdout.write(
      `${JSON.stringify({ ...rest, workspace: run.workspace.root, usage, ...(cost === undefined ? {} : { cost_usd: cost }), tokens, duration_ms: end.duration_ms, next: end.next })}\n`,
    );
    return;
  }
  const color =
    summary.status === "verified"
      ? style.green
      : summary.status === "unverified" || summary.status === "needs_review"
        ? style.yellow
        : style.red;
  const label = (name: string) => style.bold(name.padEnd(10));
  const lines = [
    `${label("status")}${color(summary.status)}${summary.reason ? ` (${escapeForTerminal(summary.reason)})` : ""}`,
    ...(summary.message
      ? [`${label("why")}${escapeForTerminal(withWorkspace(summary.message, run.workspace))}`]
      : []),
    `${label("session")}${summary.session}`,
    `${label("workspace")}${run.workspace.root}`,
    `${label("activity")}${summary.model_requests} model requests, ${summary.tool_calls} tool calls, ${summary.events} events`,
    `${label("tokens")}${tokenLine(summary.usage)}`,
    ...(summary.agents_usage
      ? [
          `${label("children")}${summary.agents_usage.model_requests} model requests, ${summary.agents_usage.tool_calls} tool calls, ` +
            `tokens ${summary.agents_usage.input_tokens} in, ${summary.agents_usage.output_tokens} out`,
        ]
      : []),
    ...(cost === undefined ? [] : [`${label("cost")}${formatCost(cost)}`]),
    `${label("duration")}${(end.duration_ms / 1000).toFixed(1)} s`,
  ];
  if (summary.answer) {
    // The model's own words: a multi-line answer continues under the model-text prefix, so none
    // of its lines can pass for one of these summary lines.
    const [first = "", ...rest] = escapeLines(summary.answer);
    lines.push(`${label("answer")}${first}`);
    for (const line of rest) lines.push(`${" ".repeat(10)}${style.dim(MODEL_TEXT_PREFIX)}${line}`);
  }
  if (summary.status === "unverified")
    lines.push(style.dim("(no --accept check ran: the model's claim was not verified)"));
  for (const command of end.next) lines.push(`${label("next")}${escapeForTerminal(command)}`);
  // -q: the verdict alone (errors still reach stderr).
  if (output.quiet) lines.splice(1);
  process.stderr.write(run.events ? `${lines.join("\n")}\n` : "");
  if (!run.events) process.stdout.write(`${lines.join("\n")}\n`);
}
