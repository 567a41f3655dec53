import { randomBytes } from "node:crypto";
import { readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { checkArtifacts } from "../../artifacts/file-store.js";
import { assessTrust } from "../../journal/trust.js";
import { verifyJournalBytes } from "../../journal/verify.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import { errnoCode } from "../../shared/errno.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { type ReportMeta, reportHtml } from "../../viewer/page.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { LAST_OPTION, sessionFromArgs } from "../session-id.js";
import { UsageError } from "../usage-error.js";
import type { OpenedWorkspace } from "../workspace.js";
import { referencedArtifacts } from "./journal.js";

const HELP = `Usage: harness report SESSION [--workspace DIR] -o FILE
       harness report --last [--workspace DIR] -o FILE

Write a session as one self-contained HTML page: its turns, model requests and replies, tool
calls with status and duration, the diffs of edits and writes, shell commands and their output,
approvals, acceptance checks and the outcome (the view harness serve --http shows live).
SESSION may be the start of an id. The journal is verified first (hash chain, authentication by
your key, artifacts) and the verdict is shown at the top of the page.

The file loads nothing and sends nothing: its scripts and styles are inline, and its
Content-Security-Policy forbids every connection. Everything from the session is shown as text.
It holds what the journal holds (goal, arguments, tool output), so share it as you would the journal.

  -o, --output FILE   where to write the page (replaced if it is a file; never a directory);
                      - writes it to standard output
  -w, --workspace DIR the workspace whose session it is (default: the current directory)
  --last              the session written most recently

Exit 0 when written from a verified journal, 5 when written but the journal did not verify
(the page shows the verified records and says what is wrong), 64 on bad usage.`;

export const reportCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
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
    const { workspace, sessionId } = await sessionFromArgs(
      values.workspace,
      positionals[0],
      values.last,
      "harness report SESSION -o FILE",
    );
    const { records, verdict } = await verifiedRecords(workspace, sessionId);
    const html = reportHtml(records, { session: sessionId, generated: new Date().toISOString(), verdict });
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
  workspace: OpenedWorkspace,
  sessionId: string,
): Promise<{ records: AnyRecord[]; verdict: ReportMeta["verdict"] }> {
  const dir = workspace.sessionDir(sessionId);
  const bytes = await readFile(join(dir, "events.jsonl"));
  const result = verifyJournalBytes(bytes, sessionId);
  if (!result.ok) {
    const prefix = verifyJournalBytes(bytes.subarray(0, result.validBytes), sessionId);
    const records = prefix.ok ? prefix.records : [];
    const problems = [
      `${result.code}: ${result.message}`,
      `only the first ${result.validRecords} records are shown`,
    ];
    return { records, verdict: { ok: false, records: records.length, problems } };
  }
  const problems: string[] = [];
  const trust = assessTrust(result.records, workspace.backend.key, sessionId);
  if (!trust.trusted) problems.push(`UNTRUSTED: ${trust.message}`);
  const artifacts = await checkArtifacts(join(dir, "artifacts"), referencedArtifacts(result.records));
  for (const id of artifacts.modified)
    problems.push(`artifact ${id} was modified: its bytes no longer have that SHA-256`);
  for (const id of artifacts.missing)
    problems.push(`artifact ${id} is referenced by the journal but missing`);
  const verdict: ReportMeta["verdict"] = {
    ok: problems.length === 0,
    records: result.records.length,
    problems,
  };
  if (verdict.ok)
    verdict.detail = `authenticated by your key; ${artifacts.intact} artifact(s) match their SHA-256`;
  return { records: result.records, verdict };
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
