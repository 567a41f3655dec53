import { join } from "node:path";
import { FileArtifactStore } from "../../artifacts/file-store.js";
import { EVENTS_FILE } from "../../journal/session-path.js";
import { assessTrust } from "../../journal/trust.js";
import { verifyJournal } from "../../journal/verify.js";
import { UsageError } from "../../session/usage-error.js";
import { escapeForTerminal, jsonForTerminal } from "../../shared/terminal-text.js";
import { auditWorkspace } from "../../undo/audit.js";
import { ReplayError } from "../../undo/replay.js";
import { type ChangeSet, type Entry, isDir, isOversize, isSpecial } from "../../workspace/manifest.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { LAST_OPTION, sessionFromArgs } from "../session-id.js";

const HELP = `Usage: harness audit SESSION [--workspace DIR] [--json]

Check that the workspace is exactly what SESSION's record says: its recorded base tree plus
every change the session recorded (file tools, shell commands, acceptance commands, undos, and
changes it found made by no call). Any file created, modified or deleted otherwise is listed:
who changed it is not known, that it happened is. First the journal itself is verified (as
harness journal verify does): an intact chain that authenticates under your journal key is what
makes the record proof of what the session did and did not change. SESSION may be the start of
an id, or --last.

Options:
  --workspace, -w DIR   the workspace (default: the current directory)
  --json                print {session, journal: {ok, trusted, records, message?}, base: {manifest, files},
                        expected_files, recorded_outside, outside: {created, modified, deleted},
                        unverified: [{path, kind, size?}]}

A FIFO, socket or device, and a file over 2 GiB, are recorded by their kind or size only: one
made, changed in kind or size, or removed outside the record is listed like any file; their
content is never compared, so each is also listed as unverified.

Exit codes: 0 the workspace matches the record and the journal is yours and intact, 1 files changed
outside the record, 5 the journal is damaged or not trusted, 64 usage error (also: a session recorded
before harness recorded workspaces, which has no base to compare with).`;

export const auditCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      json: { type: "boolean" },
      ...LAST_OPTION,
    });
    if (positionals.length > 1)
      throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(" ")}`);
    const { workspace, sessionId } = await sessionFromArgs(
      values.workspace,
      positionals[0],
      values.last,
      "harness audit SESSION",
    );
    const print = (json: unknown, lines: string[]) =>
      process.stdout.write(values.json ? `${jsonForTerminal(json)}\n` : `${lines.join("\n")}\n`);
    const verified = await verifyJournal(join(workspace.sessionDir(sessionId), EVENTS_FILE));
    if (!verified.ok) {
      print({ session: sessionId, journal: { ok: false, code: verified.code, message: verified.message } }, [
        `journal ${sessionId}: ${verified.code}: ${escapeForTerminal(verified.message)}`,
        "its record cannot be replayed; see: harness journal verify",
      ]);
      return EXIT.journalRefused;
    }
    const trust = assessTrust(verified.records, workspace.store.key, sessionId);
    const journal = {
      ok: true,
      trusted: trust.trusted,
      records: verified.records.length,
      ...(trust.trusted ? {} : { message: trust.message }),
    };
    const artifacts = new FileArtifactStore(join(workspace.sessionDir(sessionId), "artifacts"));
    let audit: Awaited<ReturnType<typeof auditWorkspace>>;
    try {
      audit = await auditWorkspace(verified.records, artifacts, workspace.root);
    } catch (error) {
      if (error instanceof ReplayError) throw new UsageError(`session ${sessionId}: ${error.message}`);
      throw error;
    }
    const { outside } = audit;
    const count = outside.created.length + outside.modified.length + outside.deleted.length;
    const lines = [
      trust.trusted
        ? `journal ${sessionId}: intact, ${verified.records.length} records, authenticated by your key`
        : `journal ${sessionId}: UNTRUSTED: ${escapeForTerminal(trust.message)}`,
      `record: base of ${audit.base.files} files + every recorded change = ${audit.expectedFiles} files` +
        (audit.recordedOutside > 0
          ? ` (${audit.recordedOutside} change(s) the session found made by no call are part of it)`
          : ""),
      ...listed(outside),
      ...audit.unverified.map(
        ({ path, entry }) =>
          `  unverified ${escapeForTerminal(path)} (${unreadKind(entry)}: content not recorded)`,
      ),
      count > 0
        ? `${count} file(s) changed outside the session's record`
        : audit.unverified.length > 0
          ? `the workspace matches the record except for content it cannot hold: ${audit.unverified.length} entr${audit.unverified.length === 1 ? "y" : "ies"} recorded by kind or size only, not compared`
          : "the workspace matches the record: nothing changed outside it",
    ];
    print(
      {
        session: sessionId,
        journal,
        base: { manifest: audit.base.manifest, files: audit.base.files },
        expected_files: audit.expectedFiles,
        recorded_outside: audit.recordedOutside,
        outside: {
          created: outside.created.map((c) => c.path),
          modified: outside.modified.map((m) => m.path),
          deleted: outside.deleted.map((d) => d.path),
        },
        unverified: audit.unverified.map(({ path, entry }) => ({
          path,
          kind: isSpecial(entry) ? entry.special : "oversize",
          ...(isOversize(entry) ? { size: entry.size } : {}),
        })),
      },
      lines,
    );
    if (!trust.trusted) return EXIT.journalRefused;
    return count > 0 ? EXIT.conflicts : EXIT.ok;
  },
};

/** What the record holds of an entry it cannot read: its kind, or "over the size limit". */
function unreadKind(entry: Entry): string {
  if (isSpecial(entry)) return entry.special;
  return isOversize(entry) ? `file of ${entry.size} bytes, over the size limit` : "entry";
}

function listed(diff: ChangeSet): string[] {
  return [
    // A directory is shown with a trailing slash.
    ...diff.created.map((c) => `  created   ${escapeForTerminal(c.path)}${isDir(c.after) ? "/" : ""}`),
    ...diff.modified.map((m) => `  modified  ${escapeForTerminal(m.path)}${isDir(m.after) ? "/" : ""}`),
    ...diff.deleted.map((d) => `  deleted   ${escapeForTerminal(d.path)}${isDir(d.before) ? "/" : ""}`),
  ].sort((a, b) => (a.slice(12) < b.slice(12) ? -1 : 1));
}
