import type { CheckOutcome } from "../../engine/acceptance.js";
import { short } from "../../proposals/apply.js";
import { type ApplyOutcome, proposalsOf, type RecordedProposal } from "../../proposals/ledger.js";
import { applySession } from "../../session/operations/apply.js";
import { UsageError } from "../../session/usage-error.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { displayWidth, padEndWidth } from "../../shared/text-width.js";
import { WorkspaceError, type WorkspaceFs } from "../../workspace/fs.js";
import { versionOf } from "../../workspace/version.js";
import { parse, positiveInt } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { stderrNotices } from "../notices.js";
import { LAST_OPTION, sessionFromArgs } from "../session-id.js";
import { colorEnabled, createStyle, type Style } from "../style.js";

const DIFF_HELP = `Usage: harness diff SESSION [--workspace DIR] [--json]

Show the changes a propose-mode session (harness run --write propose) proposed, as unified
diffs against the files they were based on: one proposal per file (the latest). Each is marked
pending, applied, or stale (the file changed since: applying it will report a conflict).
Nothing is changed. Colour only on a terminal (set NO_COLOR to turn it off).

Options:
  --workspace, -w DIR  the workspace (default: the current directory)
  --json               print one JSON object on stdout`;

const APPLY_HELP = `Usage: harness apply SESSION [--accept CMD]... [--workspace DIR] [--json]

Apply a session's proposed changes to the workspace. A file is written only if it is still the
version the proposal was based on (a proposed new file: still absent), checked again at the
moment of the atomic write; otherwise it is reported as a conflict and left alone. Applying
again is a no-op (already applied). Every outcome is recorded in the session's journal.
A sub-agent's proposals may also delete a file (only if it is still the version the deletion
was based on) or keep a binary or large file's content in the session's artifacts.

After applying, each --accept command runs in the workspace; the session is verified only if
every file applied and every command exits 0.

Options:
  --workspace, -w DIR  the workspace (default: the current directory)
  --accept CMD         acceptance command, run after applying (repeatable)
  --accept-timeout MS  timeout per acceptance command (default 600000)
  --json               print one JSON object on stdout

Exit codes: 0 everything applied (and accepted), 2 a conflict or a failed check, 64 usage error.`;

type ProposalState = "pending" | "applied" | "stale";

export const diffCommand = {
  help: DIFF_HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      json: { type: "boolean" },
      ...LAST_OPTION,
    });
    const { workspace, sessionId } = await sessionArgument(values, positionals, "diff");
    const ledger = proposalsOf(await workspace.store.read(sessionId));
    const shown = [];
    for (const proposal of ledger.current) {
      shown.push({
        proposal,
        state: await stateOf(workspace.fs, proposal, ledger.applied.has(proposal.proposal_id)),
      });
    }
    if (values.json) {
      const proposals = shown.map(({ proposal, state }) => ({
        proposal_id: proposal.proposal_id,
        path: proposal.path,
        base_version: proposal.base_version,
        content_sha256: proposal.content_sha256,
        ...(proposal.deleted === true ? { deleted: true } : {}),
        ...(proposal.content_artifact !== undefined ? { content_artifact: proposal.content_artifact } : {}),
        state,
        diff: proposal.diff,
      }));
      process.stdout.write(`${JSON.stringify({ session: sessionId, proposals })}\n`);
      return EXIT.ok;
    }
    const style = createStyle(colorEnabled(process.stdout));
    if (shown.length === 0) {
      process.stdout.write(`session ${sessionId} has no proposed changes\n`);
      return EXIT.ok;
    }
    const lines = [`session ${sessionId}: ${shown.length} proposed change${shown.length === 1 ? "" : "s"}`];
    for (const { proposal, state } of shown) lines.push("", ...renderProposal(proposal, state, style));
    process.stdout.write(`${lines.join("\n")}\n`);
    return EXIT.ok;
  },
};

export const applyCommand = {
  help: APPLY_HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      accept: { type: "string", multiple: true },
      "accept-timeout": { type: "string" },
      json: { type: "boolean" },
      ...LAST_OPTION,
    });
    const { workspace, sessionId } = await sessionArgument(values, positionals, "apply");
    const acceptTimeoutMs = positiveInt(values["accept-timeout"], "--accept-timeout") ?? 600_000;
    const { status, outcomes, acceptance, skippedAcceptance } = await applySession(workspace, sessionId, {
      commands: values.accept ?? [],
      acceptTimeoutMs,
      env: process.env,
      notify: stderrNotices,
    });
    const code = status === "conflict" || status === "acceptance_failed" ? EXIT.stopped : EXIT.ok;
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ session: sessionId, status, proposals: outcomes, acceptance: acceptance ?? null })}\n`,
      );
      return code;
    }
    const style = createStyle(colorEnabled(process.stdout));
    process.stdout.write(
      `${renderApply(sessionId, status, outcomes, acceptance, skippedAcceptance, style).join("\n")}\n`,
    );
    return code;
  },
};

function sessionArgument(
  values: { workspace?: string | undefined; last?: boolean | undefined },
  positionals: string[],
  command: string,
) {
  const [given, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  return sessionFromArgs(values.workspace, given, values.last, `harness ${command} SESSION`);
}

async function stateOf(
  fs: WorkspaceFs,
  proposal: RecordedProposal,
  applied: boolean,
): Promise<ProposalState> {
  if (applied) return "applied";
  let current: string | null = null;
  try {
    // As apply judges it: a path that now leads through a link would not be applied.
    if ((await fs.resolve(proposal.path)) !== proposal.path) return "stale";
    const stat = await fs.stat(proposal.path);
    if (stat?.kind === "file") current = versionOf(await fs.readFile(proposal.path));
    else if (stat !== undefined) return "stale";
  } catch (error) {
    if (error instanceof WorkspaceError) return "stale";
    throw error;
  }
  // A deletion whose file is already gone has its effect (apply reports it already applied).
  if (proposal.deleted === true && current === null) return "applied";
  return current === proposal.base_version ? "pending" : "stale";
}

function renderProposal(proposal: RecordedProposal, state: ProposalState, style: Style): string[] {
  const base =
    proposal.base_version === null
      ? "new file"
      : `based on ${escapeForTerminal(short(proposal.base_version))}`;
  const label =
    state === "pending"
      ? style.yellow("pending")
      : state === "applied"
        ? style.green("applied")
        : style.red("stale: the file changed since; apply will report a conflict");
  // What kind of change: a deletion, or content kept as an artifact (binary or large), says so.
  const kind =
    proposal.deleted === true
      ? `  ${style.red("delete")}`
      : proposal.content_artifact !== undefined
        ? `  ${style.dim(`content in artifact ${escapeForTerminal(short(proposal.content_artifact))}`)}`
        : "";
  const header = `${style.bold(escapeForTerminal(proposal.path))}  ${style.dim(`${escapeForTerminal(proposal.proposal_id)}, ${base}`)}${kind}  ${label}`;
  // Diff lines carry the proposed file's bytes: each is escaped before it is coloured, so content
  // cannot drive the terminal or pass for a line of harness's own.
  const body = proposal.diff
    .replace(/\n$/, "")
    .split("\n")
    .map(escapeForTerminal)
    .map((line) => {
      if (line.startsWith("+++") || line.startsWith("---")) return style.bold(line);
      if (line.startsWith("@@")) return style.cyan(line);
      if (line.startsWith("+")) return style.green(line);
      if (line.startsWith("-")) return style.red(line);
      return line;
    });
  return [header, ...(proposal.diff === "" ? [style.dim("(no change to the content)")] : body)];
}

function renderApply(
  sessionId: string,
  status: string,
  outcomes: readonly ApplyOutcome[],
  acceptance: { accepted: boolean; checks: CheckOutcome[] } | undefined,
  skippedAcceptance: boolean,
  style: Style,
): string[] {
  if (outcomes.length === 0) return [`session ${sessionId} has no proposed changes; nothing to apply`];
  const shownPath = (o: ApplyOutcome) => escapeForTerminal(o.path);
  const width = Math.max(...outcomes.map((o) => displayWidth(shownPath(o))));
  const lines = outcomes.map((o) => {
    const label =
      o.outcome === "applied"
        ? style.green("applied        ")
        : o.outcome === "already_applied"
          ? style.dim("already applied")
          : style.red("conflict       ");
    return `${label}  ${padEndWidth(shownPath(o), width)}  ${style.dim(escapeForTerminal(o.proposal_id))}  ${escapeForTerminal(o.message)}`;
  });
  if (skippedAcceptance) lines.push(style.dim("acceptance checks not run: a file could not be applied"));
  for (const check of acceptance?.checks ?? []) {
    const mark = check.passed ? style.green("passed") : style.red("failed");
    const code = check.exit_code === undefined ? "" : ` (exit ${check.exit_code ?? "none"})`;
    lines.push(`check ${mark}  ${escapeForTerminal(check.name)}${code}`);
  }
  const color = status === "conflict" || status === "acceptance_failed" ? style.red : style.green;
  lines.push(`${style.bold("status")}  ${color(status)}`);
  return lines;
}
