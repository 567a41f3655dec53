import { randomBytes } from "node:crypto";
import { rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { checkArtifacts } from "../../artifacts/file-store.js";
import { assessTrust } from "../../journal/trust.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import { type JournalSource, openSessionSource } from "../../session/journal-source.js";
import { UsageError } from "../../session/usage-error.js";
import { errnoCode } from "../../shared/errno.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { type ReportAgent, type ReportMeta, reportHtml } from "../../viewer/page.js";
import { type AgentNode, agentTree } from "../agent-tree.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { stderrNotices } from "../notices.js";
import { LAST_OPTION, sessionIdFromArgs } from "../session-id.js";
import { referencedArtifacts } from "./journal.js";

const HELP = `Usage: harness report SESSION [--workspace DIR] -o FILE
       harness report --last [--workspace DIR] -o FILE
       harness report SESSION --database URL [--workspace DIR] -o FILE

Write a session as one self-contained HTML page: its turns, model requests and replies, tool
calls with status and duration, the diffs of the edits and writes that were applied (the same
unified diff the chat shows; a denied edit is marked denied, with no diff), shell commands and
their output, each approval just before the call it answered, acceptance checks, the outcome,
and totals (calls, edits, denied, approvals, tokens when recorded, duration). The view harness
serve --http shows live. Each sub-agent is shown inside the agent call that started it (label,
outcome, spend, changes, conflicts) with its own session's records, and its sub-agents below.
SESSION may be the start of an id. The journal is verified first (hash chain, authentication by
your key, artifacts) and the verdict is shown at the top of the page.

The file loads nothing and sends nothing: its scripts and styles are inline, and its
Content-Security-Policy forbids every connection. Everything from the session is shown as text.
It holds what the journal holds (goal, arguments, tool output), so share it as you would the journal.

  -o, --output FILE   where to write the page (replaced if it is a file; never a directory);
                      - writes it to standard output
  -w, --workspace DIR the workspace whose session it is (default: the current directory)
  --last              the session written most recently
  --database URL      the session is stored in PostgreSQL (postgres://USER:PASSWORD@HOST:PORT/DB),
                      named by its full id; its artifacts are checked in the workspace --workspace
                      names, and not at all without it

Exit 0 when written from a verified journal, 5 when written but the journal did not verify
(the page shows the verified records and says what is wrong), 64 on bad usage (an unknown
session, a bad --database URL); nothing is written when the session cannot be read.`;

export const reportCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      database: { type: "string" },
      output: { type: "string", short: "o" },
      ...LAST_OPTION,
    });
    if (positionals.length > 1) throw new UsageError("name one session: harness report SESSION -o FILE");
    if (values.output === undefined || values.output === "") {
      throw new UsageError(
        "where should the page go? harness report SESSION -o report.html (or -o - for stdout)",
      );
    }
    const target = values.output === "-" ? undefined : resolve(values.output);
    if (target !== undefined) await refuseDirectory(target);
    const sessionId = await sessionIdFromArgs(
      values,
      positionals[0],
      values.last,
      "harness report SESSION -o FILE",
    );
    const source = await openSessionSource(values, sessionId, { withArtifacts: true, notify: stderrNotices });
    const { records, verdict, agents } = await verifiedRecords(source, sessionId)
      .then(async (read) => ({ ...read, agents: reportAgents(await agentTree(source.store, read.records)) }))
      .finally(() => source.close());
    const html = reportHtml(
      records,
      { session: sessionId, generated: new Date().toISOString(), verdict },
      agents,
    );
    if (target === undefined) process.stdout.write(html);
    else {
      await writeReplacing(target, html);
      const how = verdict.ok ? "journal verified" : "journal did NOT verify";
      process.stdout.write(
        `report ${escapeForTerminal(target)}: session ${sessionId}, ${records.length} records, ${how}\n`,
      );
    }
    if (!verdict.ok) {
      process.stderr.write(
        `harness report: session ${sessionId}: ${escapeForTerminal(verdict.problems.join("; "))}\n`,
      );
      return EXIT.journalRefused;
    }
    return EXIT.ok;
  },
};

/**
 * The records to show and what verifying them found. A damaged journal (torn, corrupt, tampered)
 * still gets a page: the longest prefix that verifies, with the fault as the verdict.
 */
async function verifiedRecords(
  source: JournalSource,
  sessionId: string,
): Promise<{ records: AnyRecord[]; verdict: ReportMeta["verdict"] }> {
  const { result, records } = await source.verifiedPrefix(sessionId);
  if (!result.ok) {
    const problems = [
      `${result.code}: ${result.message}`,
      `only the first ${result.validRecords} records are shown`,
    ];
    return { records, verdict: { ok: false, records: records.length, problems } };
  }
  const problems: string[] = [];
  const trust = assessTrust(records, source.store.key, sessionId);
  if (!trust.trusted) problems.push(`UNTRUSTED: ${trust.message}`);
  // Sessions in a database keep their artifacts on a disk: checked only where --workspace names one.
  const artifactsDir = source.artifactsDir(sessionId);
  const artifacts = artifactsDir
    ? await checkArtifacts(artifactsDir, referencedArtifacts(records))
    : undefined;
  for (const id of artifacts?.modified ?? [])
    problems.push(`artifact ${id} was modified: its bytes no longer have that SHA-256`);
  for (const id of artifacts?.missing ?? [])
    problems.push(`artifact ${id} is referenced by the journal but missing`);
  const verdict: ReportMeta["verdict"] = { ok: problems.length === 0, records: records.length, problems };
  if (verdict.ok) {
    const checked = artifacts
      ? `${artifacts.intact} artifact(s) match their SHA-256`
      : "artifacts not checked (they stay on the disk of the workspace the session ran in)";
    verdict.detail = `authenticated by your key; ${checked}`;
  }
  return { records, verdict };
}

/** The sub-agents' sessions as the page embeds them, keyed by the agent call that started each. */
function reportAgents(nodes: readonly AgentNode[]): Record<string, ReportAgent> {
  const out: Record<string, ReportAgent> = {};
  for (const node of nodes)
    out[node.call_id] = {
      session: node.child_session,
      label: node.label,
      records: node.records,
      agents: reportAgents(node.agents),
    };
  return out;
}

async function refuseDirectory(target: string): Promise<void> {
  const info = await stat(target).catch(() => undefined);
  if (info?.isDirectory()) {
    throw new UsageError(
      `-o ${escapeForTerminal(target)} is a directory; name a file, e.g. -o ${escapeForTerminal(join(target, "report.html"))}`,
    );
  }
}

/** Written beside the target and renamed over it, so a reader never sees half a page. */
async function writeReplacing(target: string, html: string): Promise<void> {
  const temp = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writeFile(temp, html, { mode: 0o600, flag: "wx" });
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true });
    const code = errnoCode(error);
    if (code === "ENOENT")
      throw new UsageError(`cannot write ${escapeForTerminal(target)}: its folder does not exist`);
    if (code === "EISDIR")
      throw new UsageError(`-o ${escapeForTerminal(target)} is a directory; name a file`);
    if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
      throw new UsageError(
        `cannot write ${escapeForTerminal(target)} (${code}): choose a place you can write`,
      );
    }
    throw error;
  }
}
