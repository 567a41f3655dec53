import { SessionState } from "../../engine/state.js";
import { requestTokens } from "../../engine/tokens.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import type { Usage } from "../../protocol/types.js";
import { modelNameOf } from "../../providers/provider.js";
import { DATABASE_HELP, openSessionSource } from "../../session/journal-source.js";
import { statusOf } from "../../session/status.js";
import { escapeForTerminal, jsonForTerminal } from "../../shared/terminal-text.js";
import { padEndWidth } from "../../shared/text-width.js";
import { agentTree, agentTreeJson, agentTreeLines } from "../agent-tree.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { fitText, outputWidth } from "../fit.js";
import { callView, findCall, renderCall } from "../inspect-call.js";
import { mcpStats } from "../mcp-stats.js";
import { byHook, connectionLine, connectionLines, connectionsOf } from "../net-connections.js";
import { stderrNotices } from "../notices.js";
import { leftText, quotaLine, quotaUsage } from "../quota-usage.js";
import { LAST_OPTION, sessionIdFromArgs } from "../session-id.js";
import { colorEnabled, createStyle, type Style } from "../style.js";

const HELP = `Usage: harness inspect SESSION [--workspace DIR | --database URL] [--json]
       harness inspect SESSION --call ID [--json]

A readable timeline of a session: model requests, tool calls with status and duration,
approvals, acceptance checks and the outcome; for each process harness started (shell
commands, command hooks, acceptance commands), its purpose, sandbox profile and the names of
the environment variables it received; then per-tool counts, p50/p95 durations, errors,
denials and the time calls waited for ordered commit, MCP calls per server (calls, ok,
errors, denied, unknown outcomes), and the input tokens per model request
(harness's estimate before sending, the provider's report after, and how much of it the
provider read from its prompt cache) with their peaks and totals.
A session that delegated lists its sub-agents (label, depth, outcome, spend, changes, conflicts),
a child's own sub-agents nested below it, and the totals add what the children spent.
Every connection a call's processes made through the network proxy (--network policy) is listed
per call: how many, allowed, denied, failed, the bytes each way and the hosts; a command hook's
(a hook with "network": true) under the call it ran for, its hosts marked with the hook's name.
A session whose model requests reserved against a shared quota (a worker's --quota, a server
identity's) has one "quota" line per quota: what its requests spent, how many were refused, and
what the quota had left when last recorded (other sessions spend from it too).
--json prints {session, status, timeline, tools, mcp, usage, agents, agents_usage, tokens, connections, quota}
instead (mcp: [{server, calls, ok, errors, denied, unknown}]; agents: [{label, child_session,
depth, outcome, usage, changes, conflicts, agents}], outcome and usage null while a child has
not finished; agents_usage: what the children spent); usage totals
input_tokens, output_tokens, reasoning_tokens, cached_tokens (read from the provider's prompt
cache) and cache_write_tokens (written to it); tokens is
{requests: [{step, attempt, estimated_input_tokens, reported_input_tokens, cached_input_tokens,
cache_write_tokens, context_window}],
peak: {estimated_input_tokens, reported_input_tokens}} (null where a journal has no number);
connections: [{call_id, hook, host, port, decision, rule, reason, address, bytes_up, bytes_down, ms}]
(hook: the command hook that connected, absent for the call's own processes);
quota: [{quota, spent: {usd, tokens, requests}, held: {usd, tokens, requests}, refused, left}]
(held: reserved and never settled; left: {usd?, tokens?, requests?} as last recorded, or null).
--call ID prints one call's whole result: its arguments, status and summary, then a command's
whole stdout and stderr (read from the session's artifacts, checked against their SHA-256; the
journal keeps only their first and last bytes) or any other tool's whole result. With --json:
{call_id, name, arguments, status, error_type, summary, content, content_complete, hint,
duration_ms, data, stdout, stderr} where each stream is {bytes, text, complete, artifact}.
An id the session has no call with is an error (exit 64) listing the ids it has.
${DATABASE_HELP}`;

export const inspectCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      database: { type: "string" },
      json: { type: "boolean" },
      call: { type: "string" },
      ...LAST_OPTION,
    });
    const sessionId = await sessionIdFromArgs(values, positionals[0], values.last, "harness inspect SESSION");
    const workspace = await openSessionSource(values, sessionId, { notify: stderrNotices });
    // Showing a journal runs nothing, so an untrusted one is shown, labelled as such.
    const { records, trust } = await workspace.store.readReport(sessionId);
    if (values.call !== undefined) {
      const view = await callView(
        findCall(records, values.call, sessionId),
        workspace.artifactsDir(sessionId),
      );
      if (!trust.trusted) process.stderr.write(`harness: UNTRUSTED: ${escapeForTerminal(trust.message)}\n`);
      const text = values.json
        ? `${JSON.stringify({ ...view, ...(trust.trusted ? {} : { untrusted: trust.message }) })}\n`
        : renderCall(view, createStyle(colorEnabled(process.stdout)));
      // A whole output can be megabytes: the process exits when main returns, so wait until a
      // pipe has taken it all (writes to a pipe are not synchronous).
      await new Promise<void>((resolve, reject) =>
        process.stdout.write(text, (error) => (error ? reject(error) : resolve())),
      );
      return EXIT.ok;
    }
    const state = SessionState.from(records);
    const tools = toolStats(records);
    const mcp = mcpStats(records);
    const tokens = requestTokens(records);
    const agents = await agentTree(workspace.store, records);
    if (values.json) {
      const trusted = trust.trusted ? { trusted: true } : { trusted: false, untrusted: trust.message };
      process.stdout.write(
        `${JSON.stringify({ session: sessionId, status: statusOf(state), ...trusted, timeline: records.map(describe), tools, mcp, usage: state.usage, agents: agentTreeJson(agents), agents_usage: state.agentUsage, tokens, connections: connectionsOf(records), quota: quotaUsage(records) })}\n`,
      );
      return EXIT.ok;
    }
    const style = createStyle(colorEnabled(process.stdout));
    const start = records[0] ? Date.parse(records[0].time) : 0;
    const out: string[] = [];
    if (!trust.trusted) out.push(style.red(`UNTRUSTED: ${escapeForTerminal(trust.message)}`), "");
    out.push(
      `${style.bold("session")} ${escapeForTerminal(sessionId)}   ${style.bold("status")} ${escapeForTerminal(statusOf(state))}`,
    );
    if (state.goal) out.push(`${style.bold("goal")}    ${escapeForTerminal(state.goal)}`);
    out.push("");
    for (const record of records) {
      const offset = `+${((Date.parse(record.time) - start) / 1000).toFixed(3)}s`.padStart(10);
      out.push(`${style.dim(offset)}  ${render(record, style)}`);
    }
    out.push("");
    out.push(
      `${style.bold("totals")}  ${state.modelRequests} model requests, ${state.toolCalls} tool calls, ${records.length} events; ` +
        `tokens in ${state.usage.input_tokens} / out ${state.usage.output_tokens}` +
        `, cached ${state.usage.cached_tokens} read / ${state.usage.cache_write_tokens} written` +
        // The session's own spend above; what its sub-agents spent (theirs included) beside it.
        (state.agents.size > 0
          ? `; children: ${state.agentUsage.model_requests} model requests, ${state.agentUsage.tool_calls} tool calls, ` +
            `tokens in ${state.agentUsage.input_tokens} / out ${state.agentUsage.output_tokens}`
          : ""),
    );
    out.push(
      `${style.bold("peak")}    input tokens per request: estimated ${tokens.peak.estimated_input_tokens ?? "-"}, ` +
        `reported ${tokens.peak.reported_input_tokens ?? "-"}`,
    );
    for (const usage of quotaUsage(records)) out.push(`${style.bold("quota")}   ${quotaLine(usage)}`);
    if (agents.length > 0) {
      out.push("");
      out.push(style.bold("agents"));
      out.push(...agentTreeLines(agents));
    }
    if (tools.length > 0) {
      out.push("");
      out.push(`${"TOOL".padEnd(14)} CALLS  OK  ERR  DENIED  P50ms  P95ms  COMMIT-WAITms`);
      for (const t of tools) {
        out.push(
          `${padEndWidth(escapeForTerminal(t.tool), 14)} ${String(t.calls).padStart(5)} ${String(t.ok).padStart(3)} ${String(t.errors).padStart(4)} ` +
            `${String(t.denied).padStart(7)} ${String(t.p50_ms).padStart(6)} ${String(t.p95_ms).padStart(6)} ${String(t.commit_wait_ms).padStart(14)}`,
        );
      }
    }
    const connections = connectionLines(connectionsOf(records));
    if (connections.length > 0) {
      out.push("");
      out.push(style.bold("network (what left the machine, per call)"));
      out.push(...connections);
    }
    if (mcp.length > 0) {
      out.push("");
      out.push(`${"MCP SERVER".padEnd(20)} CALLS  OK  ERR  DENIED  UNKNOWN`);
      for (const m of mcp) {
        out.push(
          `${padEndWidth(escapeForTerminal(m.server), 20)} ${String(m.calls).padStart(5)} ${String(m.ok).padStart(3)} ${String(m.errors).padStart(4)} ` +
            `${String(m.denied).padStart(7)} ${String(m.unknown).padStart(8)}`,
        );
      }
    }
    process.stdout.write(`${fitText(out.join("\n"), outputWidth(process.stdout))}\n`);
    return EXIT.ok;
  },
};

function render(record: AnyRecord, style: Style): string {
  switch (record.type) {
    case "session.started":
      return `session started (${escapeForTerminal(String(record.data.provider.kind))} model, tools ${record.data.tools.map((t) => escapeForTerminal(t.name)).join(", ")})`;
    case "session.resumed":
      return style.dim("resumed");
    case "budget.reserved":
      return style.dim(
        `budget: up to $${record.data.estimate_usd.toFixed(4)} reserved for request ${record.data.step + 1}, $${record.data.left_usd.toFixed(4)} left before it`,
      );
    case "budget.settled":
      return `budget: request ${record.data.step + 1} cost $${record.data.cost_usd.toFixed(4)}, $${record.data.left_usd.toFixed(4)} left`;
    case "quota.reserved":
      return style.dim(
        `quota ${escapeForTerminal(record.data.quota)}: up to ${record.data.tokens} tokens ($${record.data.usd.toFixed(4)}) held for request ${record.data.step + 1}, ${leftText(record.data.left)} left after`,
      );
    case "quota.settled":
      return `quota ${escapeForTerminal(record.data.quota)}: request ${record.data.step + 1} spent ${record.data.tokens} tokens ($${record.data.usd.toFixed(4)}), ${leftText(record.data.left)} left`;
    case "quota.refused":
      return style.yellow(
        `quota ${escapeForTerminal(record.data.quota)}: request ${record.data.step + 1} refused, not sent: ${escapeForTerminal(record.data.why)}`,
      );
    case "tools.changed": {
      const list = (names: readonly string[]) => names.map((n) => escapeForTerminal(n)).join(", ") || "none";
      const why = record.data.reason === "resume" ? "accepted on resume" : "at a step boundary";
      return (
        `tools changed ${why} (step ${record.data.step + 1}): added ${list(record.data.added)}; ` +
        `removed ${list(record.data.removed)}; changed ${list(record.data.changed)}`
      );
    }
    case "tools.loaded":
      return `tools loaded${record.data.call_id !== undefined ? ` by ${escapeForTerminal(record.data.call_id)}` : ""}: ${record.data.names.map((n) => escapeForTerminal(n)).join(", ")}`;
    case "instructions.loaded": {
      const files = record.data.files.map(
        (f) =>
          `${escapeForTerminal(f.path)} (${f.bytes} bytes${f.truncated ? ", truncated" : ""}${f.listed ? ", listed only: over the budget" : ""}, sha256 ${f.sha256.slice(0, 12)})`,
      );
      const what = files.length > 0 ? files.join(", ") : "none found";
      return `instructions ${record.data.trigger === "start" ? "at start" : "nested"}: ${what}`;
    }
    case "skill.activated":
      return `skill activated: ${escapeForTerminal(record.data.name)} (${escapeForTerminal(record.data.source)}, sha256 ${record.data.digest.slice(0, 12)}${record.data.allowed_tools ? `, allowed-tools ${escapeForTerminal(record.data.allowed_tools.join(" "))}` : ""})`;
    case "command.expanded":
      return `command expanded: /${escapeForTerminal(record.data.name)} (${escapeForTerminal(record.data.source)}, sha256 ${record.data.digest.slice(0, 12)})`;
    case "user.input":
      return `${record.data.turn !== undefined && record.data.turn > 1 ? `turn ${record.data.turn}, ` : ""}user: ${escapeForTerminal(record.data.text)}`;
    case "user.steered":
      return `user steered: ${escapeForTerminal(record.data.text)}`;
    case "agent.started":
      return style.bold(
        `agent ${escapeForTerminal(record.data.label)} started (${escapeForTerminal(record.data.child_session)}, depth ${record.data.depth}, budget ${record.data.budget.model_requests} requests / ${record.data.budget.tool_calls} calls)`,
      );
    case "agent.approval":
      return `agent ${escapeForTerminal(record.data.label)}: ${escapeForTerminal(record.data.call_id)} ${record.data.decision === "allow" ? "approved" : "denied"} by this session's approver`;
    case "agent.merge":
      return `agent call ${escapeForTerminal(record.data.call_id)}: merging ${record.data.files.length} file(s)`;
    case "agent.finished": {
      const { usage, changes, conflicts, survivors } = record.data;
      const extra = [
        `${usage.model_requests} requests, ${usage.tool_calls} calls`,
        `${changes.length} change(s)`,
        ...(conflicts.length > 0 ? [`${conflicts.length} conflict(s)`] : []),
        ...(survivors > 0 ? [`${survivors} survivor(s) killed`] : []),
      ];
      return style.bold(
        `agent ${escapeForTerminal(record.data.child_session)} ${record.data.outcome} (${extra.join(", ")})`,
      );
    }
    case "user.command":
      return `user ran (${escapeForTerminal(record.data.call_id)}${record.data.share ? ", shared with the model" : ", not sent to the model"}): ${escapeForTerminal(record.data.command)}`;
    case "steer.delivered":
      return style.dim(`${record.data.count} steer(s) sent to the model (step ${record.data.step + 1})`);
    case "turn.interrupted":
      return style.bold(`turn ${record.data.turn} interrupted: ${escapeForTerminal(record.data.reason)}`);
    case "session.forked":
      return `forked from session ${escapeForTerminal(record.data.parent)} at record ${record.data.at_seq} (hash ${record.data.at_hash.slice(0, 12)})`;
    case "model.started": {
      const { estimated_input_tokens: estimate, context_window: window } = record.data;
      const size =
        estimate === undefined ? "" : `, ~${estimate} tokens${window === undefined ? "" : ` of ${window}`}`;
      const purpose = record.data.purpose === undefined ? "" : ` (${record.data.purpose})`;
      // A manual compaction's own ask is the user's text: shown, escaped, so the record explains itself.
      const asked =
        record.data.instructions === undefined
          ? ""
          : `; instructions: ${jsonForTerminal(truncate(record.data.instructions, 200))}`;
      return style.dim(
        `model request${purpose}: step ${record.data.step + 1}, attempt ${record.data.attempt + 1}${size}${asked}`,
      );
    }
    case "model.reply": {
      const calls = record.data.calls.map((c) => callLabel(c.name, c.id)).join(", ");
      const tokens = replyTokens(record.data.usage);
      return `model: ${jsonForTerminal(truncate(record.data.text, 100))}${calls ? ` → calls ${calls}` : " (no calls: finished)"}${tokens}`;
    }
    case "model.retryable_error":
      return style.yellow(
        `model error (retrying in ${record.data.retry_in_ms} ms): ${escapeForTerminal(record.data.code)} ${escapeForTerminal(record.data.message)}`,
      );
    case "model.failed":
      return style.red(
        `model failed: ${escapeForTerminal(record.data.code)} ${escapeForTerminal(record.data.message)}`,
      );
    case "model.protocol_error":
      return style.red(
        `protocol error: ${escapeForTerminal(record.data.error)} (evidence: ${record.data.evidence.events} events kept)`,
      );
    case "approval.requested":
      return `approval requested for ${callLabel(record.data.name, record.data.call_id)}`;
    case "approval.decided":
      return `approval ${record.data.decision} (${record.data.scope}${record.data.pattern !== undefined ? `: ${escapeForTerminal(record.data.pattern)}` : ""}, by ${escapeForTerminal(record.data.by)})`;
    case "hook.decided":
      return style.dim(
        `hook ${escapeForTerminal(record.data.hook)} ${record.data.kind}@${escapeForTerminal(record.data.point)}: ${record.data.decision}`,
      );
    case "tool.started":
      return style.dim(
        `started ${callLabel(record.data.name, record.data.call_id)} (batch ${record.data.batch}${insideOf(record.data)})`,
      );
    case "process.spawned":
      return style.dim(
        `process group ${record.data.pgid} for ${escapeForTerminal(record.data.call_id)}${ranUnder(record.data, record.data.sandboxed)}`,
      );
    case "process.started":
      return `background ${escapeForTerminal(record.data.process_id)} started by ${escapeForTerminal(record.data.call_id)} (keep ${record.data.keep}${record.data.ttl_ms !== undefined ? `, ttl ${record.data.ttl_ms} ms` : ""}): ${escapeForTerminal(record.data.command.split("\n")[0] ?? "")}`;
    case "process.ready":
      return `background ${escapeForTerminal(record.data.process_id)} ready (${record.data.by}) after ${record.data.after_ms} ms`;
    case "process.stopped":
      return `background ${escapeForTerminal(record.data.process_id)} stopped (${record.data.reason}): exit ${record.data.exit ?? "none"}${record.data.signal ? `, signal ${record.data.signal}` : ""}, ${record.data.survivors} survivor(s)`;
    case "process.lost":
      return style.bold(
        `background ${escapeForTerminal(record.data.process_id)} lost (harness stopped while it ran; ${record.data.killed} process(es) killed)`,
      );
    case "net.connection":
      return connectionLine(record.data);
    case "credential.used":
      return style.dim(
        `credential ${escapeForTerminal(record.data.name)} sent to ${escapeForTerminal(record.data.host)} for ${escapeForTerminal(record.data.call_id)}${byHook(record.data.hook)}`,
      );
    case "tool.retrying":
      return style.yellow(
        `retrying ${escapeForTerminal(record.data.call_id)}: ${escapeForTerminal(record.data.error_type)}`,
      );
    case "tool.result": {
      const color =
        record.data.status === "ok"
          ? style.green
          : record.data.status === "unknown"
            ? style.yellow
            : style.red;
      const code = record.data.error_type ? ` ${escapeForTerminal(record.data.error_type)}` : "";
      const inside = record.data.parent_call_id === undefined ? "" : ` (${insideOf(record.data).slice(2)})`;
      return `${color(record.data.status)}${code} ${callLabel(record.data.name, record.data.call_id)}${inside} ${record.data.duration_ms} ms: ${escapeForTerminal(truncate(record.data.summary, 100))}`;
    }
    case "context.compacted":
      return style.dim(
        `context compacted: ${record.data.replaced_messages} earlier messages replaced by a summary of ` +
          `${record.data.summary.length} characters (~${record.data.tokens_before} → ~${record.data.tokens_after} tokens)`,
      );
    case "context.pruned":
      return style.dim(
        `context pruned: ${record.data.results.length} earlier results replaced by artifact placeholders ` +
          `(~${record.data.tokens_before} → ~${record.data.tokens_after} tokens)`,
      );
    case "proposal.recorded":
      return `proposed ${escapeForTerminal(record.data.path)} (${escapeForTerminal(record.data.proposal_id)}, base ${record.data.base_version?.slice(0, 12) ?? "new file"})`;
    case "proposal.applied":
      return `apply ${escapeForTerminal(record.data.proposal_id)} ${escapeForTerminal(record.data.path)}: ${record.data.outcome}`;
    case "review.resolved":
      return `review of ${escapeForTerminal(record.data.call_id)} resolved: ${record.data.resolution} (by ${escapeForTerminal(record.data.by)})`;
    case "acceptance.checked":
      return `${record.data.accepted ? style.green("acceptance passed") : style.red("acceptance failed")}: ${record.data.checks
        .map((c) => `${c.passed ? "✓" : "✗"} ${escapeForTerminal(c.name)}${ranUnder(c)}`)
        .join("; ")}`;
    case "acceptance.attempt": {
      const { n, passed, failed, progress, continued } = record.data;
      const tests = progress.tests_failed === undefined ? "" : `, ${progress.tests_failed} failing test(s)`;
      const next = continued ? "; the failures went back to the model" : "";
      return `goal loop attempt ${n}: ${passed} check(s) passed, ${failed} failed${tests}${progress.improved ? "" : ` (no progress for ${progress.stalled})`}${next}`;
    }
    case "run.finished":
      return style.bold(`finished: ${record.data.status}`);
    case "run.stopped":
      return style.bold(
        `stopped: ${record.data.status} (${escapeForTerminal(record.data.reason)}): ${escapeForTerminal(record.data.message)}`,
      );
    case "run.cancelled":
      return style.bold(`cancelled: ${escapeForTerminal(record.data.reason)}`);
    case "journal.adopted":
      return style.yellow(
        `adopted by ${escapeForTerminal(record.data.by)} (key ${escapeForTerminal(record.data.key_id)}; was ${escapeForTerminal(record.data.previous_key_id ?? "unauthenticated")})`,
      );
    case "lock.recovered":
      return style.yellow(
        `took over the stale lock of pid ${record.data.pid} on ${escapeForTerminal(record.data.host)}: ${escapeForTerminal(record.data.reason)}`,
      );
    case "lease.acquired": {
      const { previous } = record.data;
      const from = previous ? ` from ${escapeForTerminal(previous.owner)} (epoch ${previous.epoch})` : "";
      return style.yellow(
        `lease epoch ${record.data.epoch} taken by ${escapeForTerminal(record.data.owner)}${from}`,
      );
    }
    case "workspace.base":
      return `workspace base: ${record.data.files} files, ${record.data.bytes} bytes (manifest ${record.data.manifest.slice(0, 12)})`;
    case "workspace.changed": {
      const { created, modified, deleted, source, call_id } = record.data;
      // A directory is shown with a trailing slash.
      const slash = (entry: object) => ("dir" in entry ? "/" : "");
      const paths = [
        ...created.map((c) => `+${c.path}${slash(c.after)}`),
        ...modified.map((m) => `~${m.path}${slash(m.after)}`),
        ...deleted.map((d) => `-${d.path}${slash(d.before)}`),
      ];
      const shown = paths.slice(0, 5).map((p) => escapeForTerminal(p));
      const more = paths.length > 5 ? ` and ${paths.length - 5} more` : "";
      const text = `workspace changed by ${source} ${escapeForTerminal(call_id)}: ${shown.join(" ")}${more}`;
      return source === "outside" ? style.yellow(text) : text;
    }
    case "undo.started":
      return style.yellow(
        `undo ${escapeForTerminal(record.data.undo_id)} started: ${record.data.plan.length} file(s) back to record ${record.data.target.seq}`,
      );
    case "undo.finished": {
      const { conflicts } = record.data;
      const left = conflicts.length > 0 ? `, ${conflicts.length} conflict(s) left alone` : "";
      return `undo ${escapeForTerminal(record.data.undo_id)} finished: ${record.data.restored} file(s) restored${left}`;
    }
    case "model.switched":
      return style.bold(
        `model switched: ${escapeForTerminal(modelNameOf(record.data.from))} → ${escapeForTerminal(modelNameOf(record.data.to))}`,
      );
    case "mode.switched":
      return style.bold(
        `mode switched: ${record.data.from} → ${record.data.to} (at most ${record.data.ceiling}, by ${escapeForTerminal(record.data.by)})`,
      );
  }
}

function describe(record: AnyRecord) {
  return { seq: record.seq, time: record.time, type: record.type, text: render(record, createStyle(false)) };
}

/** What a process ran under, as the journal recorded it (a process.spawned or an acceptance check). */
interface ProcessFacts {
  purpose?: string | undefined;
  sandbox_profile?: string | undefined;
  env_names?: string[] | undefined;
}

/**
 * ` (purpose; sandbox PROFILE; env NAME,NAME)`: what a process ran under, so a reader sees which
 * sandbox profile and which environment variables (names only) it had. Journals written before
 * these facts were recorded show only whether the process was sandboxed, where that is known.
 */
function ranUnder(facts: ProcessFacts, sandboxed?: boolean): string {
  const parts: string[] = [];
  if (facts.purpose !== undefined) parts.push(escapeForTerminal(facts.purpose));
  if (facts.sandbox_profile !== undefined) parts.push(`sandbox ${escapeForTerminal(facts.sandbox_profile)}`);
  else if (sandboxed !== undefined) parts.push(sandboxed ? "sandboxed" : "not sandboxed");
  if (facts.env_names !== undefined)
    parts.push(
      facts.env_names.length > 0
        ? `env ${facts.env_names.map((name) => escapeForTerminal(name)).join(",")}`
        : "no env variables",
    );
  return parts.length > 0 ? ` (${parts.join("; ")})` : "";
}

/** `tool#call-id`, both as the model sent them, escaped. */
/** A program's call names the call whose program made it (`batch`); the model's own, nothing. */
function insideOf(data: { parent_call_id?: string | undefined }): string {
  return data.parent_call_id === undefined ? "" : `, inside ${escapeForTerminal(data.parent_call_id)}`;
}

function callLabel(name: string, callId: string): string {
  return `${escapeForTerminal(name)}#${escapeForTerminal(callId)}`;
}

/**
 * At most `max` characters of one line. Runs of spaces, tabs and newlines become one space; every
 * other character, a carriage return included, is kept for the escaper to show.
 */
function truncate(text: string, max: number): string {
  const flat = Array.from(text.replace(/[ \t\n]+/g, " "));
  return flat.length > max ? `${flat.slice(0, max - 1).join("")}…` : flat.join("");
}

export function toolStats(records: readonly AnyRecord[]) {
  const byTool = new Map<
    string,
    { durations: number[]; ok: number; errors: number; denied: number; commitWait: number }
  >();
  for (const record of records) {
    if (record.type !== "tool.result") continue;
    const entry = byTool.get(record.data.name) ?? {
      durations: [],
      ok: 0,
      errors: 0,
      denied: 0,
      commitWait: 0,
    };
    entry.durations.push(record.data.duration_ms);
    if (record.data.status === "ok") entry.ok += 1;
    else if (record.data.status === "denied") entry.denied += 1;
    else entry.errors += 1;
    const wait = record.data.trace?.commit_wait_ms;
    if (typeof wait === "number") entry.commitWait += wait;
    byTool.set(record.data.name, entry);
  }
  return [...byTool.entries()].map(([tool, e]) => ({
    tool,
    calls: e.durations.length,
    ok: e.ok,
    errors: e.errors,
    denied: e.denied,
    p50_ms: percentile(e.durations, 0.5),
    p95_ms: percentile(e.durations, 0.95),
    commit_wait_ms: e.commitWait,
  }));
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0;
}

/** The provider's report for one reply: input tokens, and how many came from its prompt cache. */
function replyTokens(usage: Usage | undefined): string {
  if (usage?.input_tokens === undefined) return "";
  const cache = [
    usage.cached_tokens ? `${usage.cached_tokens} cached` : "",
    usage.cache_write_tokens ? `${usage.cache_write_tokens} written to cache` : "",
  ].filter((part) => part !== "");
  return ` [${usage.input_tokens} input tokens${cache.map((part) => `, ${part}`).join("")}]`;
}
