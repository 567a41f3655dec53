import { z } from "zod";
import { ConfigError } from "../../config/errors.js";
import { SessionState } from "../../engine/state.js";
import type { Evaluation } from "../../policy/evaluation.js";
import {
  explain,
  formatExplanation,
  formatProgramRuleNotes,
  programRuleNotes,
} from "../../policy/explain.js";
import { stricterVerdict } from "../../policy/intersect.js";
import { evaluateNetwork, formatNetExplanation } from "../../policy/network.js";
import { pathResolverOf } from "../../policy/path-aliases.js";
import type { Policy } from "../../policy/permissions.js";
import { subjectKindOf } from "../../policy/subject-kind.js";
import { RuleSyntaxError } from "../../rules/grammar.js";
import type { SubjectKind } from "../../runtime/ports.js";
import { flagsFromGrant } from "../../session/agents/grant.js";
import { loadGovernance } from "../../session/governance.js";
import { effectiveFlags, type RunFlags } from "../../session/run-flags.js";
import { UsageError } from "../../session/usage-error.js";
import { type OpenedWorkspace, openWorkspace } from "../../session/workspace.js";
import { isJsonObject } from "../../shared/json.js";
import { escapeForTerminal, jsonForTerminal } from "../../shared/terminal-text.js";
import { createFileTools, createProgramTools } from "../../tools/builtin.js";
import { createShellTool } from "../../tools/shell/shell.js";
import type { EffectClass } from "../../tools/tool.js";
import { oneOf, parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { stderrNotices } from "../notices.js";

const HELP = `Usage: harness policy explain TOOL 'ARGS_JSON' [options]

Show how the effective policy decides a call: the decision (allow, ask, deny, propose), the
rule that decided it and the file that rule came from. The policy is built exactly as for
harness run: built-in defaults, your user config, the project's harness.config.json (which may
only tighten unless you trust the project), then these flags.

Options: --workspace DIR, --write MODE, --read-only, --shell MODE, --allow RULE, --ask RULE,
--deny RULE (repeatable), --sandbox workspace-write|read-only|off, --json.

--session ID builds the policy from the options that session recorded (flags given here win).
--agent LABEL (with --session; a/b for a grandchild) decides the call as that sub-agent would:
its own policy, built from the grant its parent recorded (write, shell, read-only, tools, read
and edit paths), and every level above it deciding too; the stricter decision wins, and the
output says which level decided (decided_by: agent, parent, or grant for a tool not granted).
An MCP tool (mcp__SERVER__TOOL) needs --session: it is decided with the effect that session
recorded for it (its server need not run).

A deny rule that names a program (shell(curl*)) is enforced by the sandbox: the program is
replaced by a refusing stub under every name. With the sandbox off it is advisory (checked on
the command line only), and explain says so.

\`harness policy explain net '{"host": "registry.npmjs.org", "port": 443}'\` decides a connection
by the net(HOST[:PORT]) rules (deny > ask > allow; no matching rule: denied), says which rule and
source decided, and whether that rule names the host exactly (only then may the connection reach
a loopback, private or link-local address). --network policy|off says whether the run would let
commands connect at all (off, the default: never, whatever the rules say).

Example:
  harness policy explain edit_file '{"path":"src/app.ts","old_text":"a","new_text":"b"}' --write ask`;

export const policyCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      write: { type: "string" },
      "read-only": { type: "boolean" },
      shell: { type: "string" },
      allow: { type: "string", multiple: true },
      ask: { type: "string", multiple: true },
      deny: { type: "string", multiple: true },
      sandbox: { type: "string" },
      network: { type: "string" },
      session: { type: "string" },
      agent: { type: "string" },
      json: { type: "boolean" },
    });
    const [action, tool, argsJson] = positionals;
    if (action !== "explain" || !tool)
      throw new UsageError("expected: harness policy explain TOOL 'ARGS_JSON'");
    let callArgs: unknown = {};
    if (argsJson !== undefined) {
      try {
        callArgs = JSON.parse(argsJson);
      } catch {
        throw new UsageError(`ARGS_JSON is not valid JSON: ${argsJson}`);
      }
    }
    if (!isJsonObject(callArgs)) throw new UsageError("ARGS_JSON must be a JSON object");
    if (tool === "net") return explainNet(values, callArgs);
    const workspace = await openWorkspace(values.workspace, { notify: stderrNotices });
    const definition = await toolToExplain(tool, workspace, values.session);
    const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
    const given: RunFlags = {
      ...(values.write
        ? { write: oneOf(values.write, "--write", ["allow", "ask", "deny", "propose"] as const) }
        : {}),
      ...(values.shell ? { shell: oneOf(values.shell, "--shell", ["allow", "ask", "deny"] as const) } : {}),
      ...(values["read-only"] ? { readOnly: true } : {}),
      ...(values.allow ? { allow: values.allow } : {}),
      ...(values.ask ? { ask: values.ask } : {}),
      ...(values.deny ? { deny: values.deny } : {}),
      ...(values.sandbox
        ? { sandbox: oneOf(values.sandbox, "--sandbox", ["workspace-write", "read-only", "off"] as const) }
        : {}),
    };
    if (values.agent !== undefined && values.session === undefined)
      throw new UsageError(
        "--agent LABEL needs --session PARENT: the grant is read from the parent's journal",
      );
    const layers = await policyLayers(workspace, given, interactive, values.session, values.agent);
    const decided: { layer: Layer; explanation: Evaluation }[] = [];
    for (const layer of layers) {
      const { policy, processes } = await loadGovernance(workspace.root, layer.flags, process.env).catch(
        (error: unknown) => {
          // A broken config or rule is the user's input to fix, never an internal error.
          if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
          if (error instanceof RuleSyntaxError) throw new UsageError(error.message);
          throw error;
        },
      );
      layer.policy = policy;
      layer.sandboxed = processes.shell !== "none";
      decided.push({
        layer,
        explanation: await explain(
          policy,
          tool,
          definition.effect,
          callArgs,
          definition.subjectKind,
          pathResolverOf(workspace.fs),
        ),
      });
    }
    // As a child's calls are decided (policy/intersect.ts), the strictest level's decision holds.
    // Which level to name: on a tie, the highest one that holds the call back (the child cannot
    // get past it whatever it was granted); a call every level allows is the child's own grant's.
    let combined = decided[0]!.explanation.decision;
    for (const next of decided) combined = stricterVerdict(combined, next.explanation.decision);
    const holding = decided.filter((level) => level.explanation.decision === combined);
    const winner = (combined === "allow" ? holding.at(-1) : holding[0])!;
    const innermost = decided.at(-1)!;
    const offered = innermost.layer.tools === undefined || innermost.layer.tools.includes(tool);
    const explanation: Evaluation = offered
      ? winner.explanation
      : {
          ...innermost.explanation,
          decision: "deny",
          source: `agent ${innermost.layer.name}: its grant`,
          reason: `the agent was not granted the tool ${tool}: it is not offered it at all`,
        };
    const decidedBy = !offered
      ? "grant"
      : winner === innermost
        ? layers.length > 1
          ? "agent"
          : "session"
        : "parent";
    const policy = innermost.layer.policy!;
    const notes = programRuleNotes(policy, tool, innermost.layer.sandboxed === true);
    const levels =
      layers.length > 1
        ? {
            decided_by: decidedBy,
            decided_by_session: offered ? winner.layer.session : innermost.layer.session,
            levels: decided.map(({ layer, explanation: e }) => ({
              session: layer.session,
              ...(layer.label !== undefined ? { agent: layer.label } : {}),
              decision: e.decision,
              ...(e.rule !== undefined ? { rule: e.rule } : {}),
              source: e.source,
              reason: e.reason,
              ...(layer.grant !== undefined ? { grant: layer.grant } : {}),
            })),
          }
        : {};
    if (values.json) {
      const programs = notes.length > 0 ? { program_rules: notes } : {};
      process.stdout.write(
        `${jsonForTerminal({ tool, effect: definition.effect, ...explanation, ...levels, ...programs })}\n`,
      );
    } else {
      const noteText = notes.length > 0 ? `\n${formatProgramRuleNotes(notes)}` : "";
      const levelText =
        layers.length > 1
          ? `\n  decided by: ${decidedByText(decidedBy, offered ? winner.layer : innermost.layer)}` +
            decided
              .map(
                ({ layer, explanation: e }) =>
                  `\n  ${layer.label !== undefined ? "agent  " : "session"} ${escapeForTerminal(layer.name)}: ${e.decision}` +
                  `${e.rule !== undefined ? ` by ${escapeForTerminal(e.rule)}` : ""} (${escapeForTerminal(e.source)})`,
              )
              .join("")
          : "";
      process.stdout.write(`${formatExplanation(tool, explanation)}${levelText}${noteText}\n`);
    }
    return EXIT.ok;
  },
};

const RECORDED_EFFECT = z.enum([
  "pure",
  "read_only",
  "local_write",
  "process_execution",
  "network_read",
  "network_write",
  "external_side_effect",
  "destructive",
]) satisfies z.ZodType<EffectClass>;

/**
 * The tool a call is explained for: a built-in, or (with `--session`) an MCP tool as that session
 * recorded it (its servers need not run now). An MCP tool is decided by its name and the effect
 * class recorded for it, with no subject (`mcp__SERVER__TOOL`, `mcp__SERVER__*` rules).
 */
async function toolToExplain(
  tool: string,
  workspace: OpenedWorkspace,
  sessionId: string | undefined,
): Promise<{ effect: EffectClass; subjectKind: SubjectKind }> {
  const tools = [
    ...createFileTools(),
    ...createProgramTools(),
    createShellTool({ sandbox: { profile: "none" } }),
  ];
  const builtin = tools.find((t) => t.name === tool);
  if (builtin) return { effect: builtin.effect, subjectKind: subjectKindOf(builtin) };
  if (tool.startsWith("mcp__") && sessionId !== undefined) {
    const records = await readSession(workspace, sessionId);
    for (const record of [...records].reverse()) {
      if (record.type !== "session.started" && record.type !== "tools.changed") continue;
      const found = record.data.tools.find((t) => t.name === tool);
      // A recorded effect this harness does not name is taken as the one that holds back most.
      if (found)
        return { effect: RECORDED_EFFECT.catch("destructive").parse(found.effect), subjectKind: "none" };
      break;
    }
    throw new UsageError(
      `session ${escapeForTerminal(sessionId)} is not offered the MCP tool "${escapeForTerminal(tool)}"`,
    );
  }
  throw new UsageError(
    `unknown tool "${escapeForTerminal(tool)}" (tools: ${tools.map((t) => t.name).join(", ")}; an MCP tool needs --session)`,
  );
}

/** One level of the sessions whose policies decide a call: the session, or a sub-agent below it. */
interface Layer {
  session: string;
  /** The agent path below the root (`a`, `a/b`); undefined for the root session. */
  label?: string;
  name: string;
  flags: RunFlags;
  grant?: unknown;
  /** The tools the agent was granted (undefined: the session's own, not narrowed here). */
  tools?: string[];
  policy?: Policy;
  sandboxed?: boolean;
}

/**
 * The policies that decide a call, root first: the flags given (or, with `--session`, those it
 * recorded, as a resume rebuilds them), then per level of `--agent a/b` the child's own options
 * rebuilt from the grant its parent recorded, as its setup built them.
 */
async function policyLayers(
  workspace: OpenedWorkspace,
  given: RunFlags,
  interactive: boolean,
  sessionId: string | undefined,
  agentPath: string | undefined,
): Promise<Layer[]> {
  if (sessionId === undefined)
    return [{ session: "", name: "flags", flags: effectiveFlags(given, undefined, interactive) }];
  const records = await readSession(workspace, sessionId);
  let state = SessionState.from(records);
  const layers: Layer[] = [
    { session: sessionId, name: sessionId, flags: effectiveFlags(given, state.options, interactive) },
  ];
  if (agentPath === undefined) return layers;
  const labels = agentPath.split("/");
  for (const [index, label] of labels.entries()) {
    const parent = layers.at(-1)!;
    const agent = [...state.agents.values()].find((a) => a.started.label === label);
    if (agent === undefined) {
      const known = [...state.agents.values()].map((a) => a.started.label);
      throw new UsageError(
        `session ${escapeForTerminal(parent.session)} started no agent "${escapeForTerminal(label)}"` +
          (known.length > 0
            ? ` (it started: ${known.map((k) => escapeForTerminal(k)).join(", ")})`
            : " (it started none)"),
      );
    }
    const own = flagsFromGrant(parent.flags, agent.started.grant);
    if (own === undefined)
      throw new UsageError(
        `the grant recorded for agent "${escapeForTerminal(label)}" is not one this harness reads`,
      );
    const path = labels.slice(0, index + 1).join("/");
    layers.push({
      session: agent.started.child_session,
      label: path,
      name: path,
      flags: effectiveFlags(own, undefined, interactive),
      grant: agent.started.grant,
      tools: (own.tools ?? "").split(",").filter((name) => name !== ""),
    });
    if (index < labels.length - 1)
      state = SessionState.from(await readSession(workspace, agent.started.child_session));
  }
  return layers;
}

async function readSession(workspace: OpenedWorkspace, sessionId: string) {
  if (!(await workspace.store.exists(sessionId)))
    throw new UsageError(
      `no session "${escapeForTerminal(sessionId)}" in ${escapeForTerminal(workspace.root)} (list them with: harness sessions)`,
    );
  return workspace.store.read(sessionId);
}

function decidedByText(by: string, layer: Layer): string {
  const name = escapeForTerminal(layer.name);
  if (by === "grant") return `the grant of agent ${name} (the tool is not offered to it)`;
  if (by === "agent") return `agent ${name}'s own policy`;
  return `${layer.label !== undefined ? `agent ${name}` : `parent session ${name}`}: its decision is stricter`;
}

/** `harness policy explain net '{"host": "...", "port": 443}'`: one connection under the net() rules. */
async function explainNet(
  values: {
    workspace?: string | undefined;
    allow?: string[] | undefined;
    ask?: string[] | undefined;
    deny?: string[] | undefined;
    network?: string | undefined;
    session?: string | undefined;
    json?: boolean | undefined;
  },
  callArgs: Record<string, unknown>,
): Promise<number> {
  const host = callArgs.host;
  const port = callArgs.port ?? 443;
  if (typeof host !== "string" || host === "")
    throw new UsageError(
      `net needs {"host": "NAME", "port": PORT}, e.g. '{"host": "registry.npmjs.org", "port": 443}'`,
    );
  if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new UsageError("port must be a whole number from 1 to 65535");
  const workspace = await openWorkspace(values.workspace, { notify: stderrNotices });
  const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
  const given: RunFlags = {
    ...(values.allow ? { allow: values.allow } : {}),
    ...(values.ask ? { ask: values.ask } : {}),
    ...(values.deny ? { deny: values.deny } : {}),
    ...(values.network ? { network: oneOf(values.network, "--network", ["off", "policy"] as const) } : {}),
  };
  const layers = await policyLayers(workspace, given, interactive, values.session, undefined);
  const flags = layers.at(-1)!.flags;
  const { policy } = await loadGovernance(workspace.root, flags, process.env).catch((error: unknown) => {
    if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
    if (error instanceof RuleSyntaxError) throw new UsageError(error.message);
    throw error;
  });
  const evaluation = evaluateNetwork(policy, host, port);
  const mode = flags.network ?? "off";
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ tool: "net", host, port, network: mode, ...evaluation })}\n`);
    return EXIT.ok;
  }
  const lines = [formatNetExplanation(evaluation)];
  if (mode !== "policy")
    lines.push(
      "  network: off for this run (the default): commands connect nowhere whatever the rules say; --network policy turns the rules on",
    );
  process.stdout.write(`${lines.join("\n")}\n`);
  return EXIT.ok;
}
