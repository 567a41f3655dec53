import { ConfigError } from "../../config/errors.js";
import {
  explain,
  formatExplanation,
  formatProgramRuleNotes,
  programRuleNotes,
} from "../../policy/explain.js";
import { pathResolverOf } from "../../policy/path-aliases.js";
import { subjectKindOf } from "../../policy/subject-kind.js";
import { RuleSyntaxError } from "../../rules/grammar.js";
import { loadGovernance } from "../../session/governance.js";
import { effectiveFlags } from "../../session/run-flags.js";
import { UsageError } from "../../session/usage-error.js";
import { openWorkspace } from "../../session/workspace.js";
import { isJsonObject } from "../../shared/json.js";
import { jsonForTerminal } from "../../shared/terminal-text.js";
import { createFileTools } from "../../tools/builtin.js";
import { createShellTool } from "../../tools/shell/shell.js";
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

A deny rule that names a program (shell(curl*)) is enforced by the sandbox: the program is
replaced by a refusing stub under every name. With the sandbox off it is advisory (checked on
the command line only), and explain says so.

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
    const tools = [...createFileTools(), createShellTool({ sandbox: { profile: "none" } })];
    const definition = tools.find((t) => t.name === tool);
    if (!definition)
      throw new UsageError(`unknown tool "${tool}" (tools: ${tools.map((t) => t.name).join(", ")})`);
    const workspace = await openWorkspace(values.workspace, { notify: stderrNotices });
    const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
    const flags = effectiveFlags(
      {
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
      },
      undefined,
      interactive,
    );
    const { policy, processes } = await loadGovernance(workspace.root, flags, process.env).catch(
      (error: unknown) => {
        // A broken config or rule is the user's input to fix, never an internal error.
        if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
        if (error instanceof RuleSyntaxError) throw new UsageError(error.message);
        throw error;
      },
    );
    const explanation = await explain(
      policy,
      tool,
      definition.effect,
      callArgs,
      subjectKindOf(definition),
      pathResolverOf(workspace.fs),
    );
    const notes = programRuleNotes(policy, tool, processes.shell !== "none");
    if (values.json) {
      const programs = notes.length > 0 ? { program_rules: notes } : {};
      process.stdout.write(
        `${jsonForTerminal({ tool, effect: definition.effect, ...explanation, ...programs })}\n`,
      );
    } else {
      const noteText = notes.length > 0 ? `\n${formatProgramRuleNotes(notes)}` : "";
      process.stdout.write(`${formatExplanation(tool, explanation)}${noteText}\n`);
    }
    return EXIT.ok;
  },
};
