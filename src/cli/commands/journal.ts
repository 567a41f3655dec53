import { userInfo } from "node:os";
import { createInterface } from "node:readline/promises";
import { checkArtifacts } from "../../artifacts/file-store.js";
import { SessionState } from "../../engine/state.js";
import { describeOwner, type UnlockResult } from "../../journal/lock.js";
import { repairJournal } from "../../journal/repair.js";
import { assessTrust } from "../../journal/trust.js";
import type { AnyRecord, EventData } from "../../journal/vocabulary.js";
import { type JournalSource, openSessionSource } from "../../session/journal-source.js";
import { type AdoptionFacts, adoptSession, reviewAdoption } from "../../session/operations/adopt.js";
import { UsageError } from "../../session/usage-error.js";
import type { OpenedWorkspace } from "../../session/workspace.js";
import { escapeForTerminal, jsonForTerminal } from "../../shared/terminal-text.js";
import { beforeHashes } from "../../workspace/manifest.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { resumeCommand, unrecordedPlaceholders } from "../next-steps.js";
import { stderrNotices } from "../notices.js";
import { LAST_OPTION, sessionFromArgs, sessionIdFromArgs } from "../session-id.js";

const JOURNAL_HELP = `Usage: harness journal verify SESSION [--workspace DIR] [--database URL] [--json]
       harness journal repair SESSION [--workspace DIR] [--json]
       harness journal adopt SESSION [--workspace DIR] [--yes] [--json]

verify  check every record (sequence, hash chain, record hashes, event shapes), that the journal
        was recorded (or adopted) by you: its records authenticate under your journal key, and
        that every stored artifact still has its SHA-256.
        Exit 0 when intact and yours, 5 when damaged or not trusted (the message says what and where).
        A session's sub-agents are verified too, down to the deepest, and each must end at the
        record its parent's agent.finished names (head_hash): a damaged or altered child fails
        its parent, named. --json adds children: [their results] and head_mismatches.
        --database URL verifies a session stored in PostgreSQL; its artifacts are checked in the
        workspace --workspace names, and not at all without it.
repair  keep a byte-identical backup (events.jsonl.bak-<time>), then cut the journal back to
        its last valid record. Refused while a live writer holds the session.
adopt   trust a journal you did not record (a colleague's, another machine's, or one written by
        an older harness): shows what resuming it would run (acceptance commands, provider,
        base URL, key variable, goal, recorded policy flags) and asks. Only y or yes adopts;
        --yes adopts without asking (for scripts); without a terminal and without --yes it is
        refused. Adopting appends a journal.adopted record authenticated with your key that
        vouches for the chain as it is now; no earlier record is changed.

Your journal key: $HARNESS_KEY_FILE, else $XDG_CONFIG_HOME/harness/journal.key or
~/.config/harness/journal.key (created on first use, mode 0600, never inside a workspace).`;

const UNLOCK_HELP = `Usage: harness unlock SESSION [--workspace DIR | --database URL] [--force]

Clear a session's writer lock whose owner process is gone (after a crash or SIGKILL).
harness resume takes such a lock over by itself (and journals lock.recovered); this command
is for clearing it without resuming. A lock held by a live process is never removed; --force
removes a lock whose owner cannot be checked from here (e.g. another host) once you have made
sure nothing is using the session. Exit 0 when unlocked, 5 when refused.

--database URL clears the writer lock of a session stored in PostgreSQL
(postgres://USER:PASSWORD@HOST:PORT/DB) by the same rules; there a live owner is never displaced,
even with --force, nor a worker holding the session under an unexpired lease (it runs out by
itself, and the next worker takes over).`;

/**
 * Ids of every `artifact: {id}` a tool result names (its own, and those in its data, e.g. a
 * command's streams), and what the workspace record keeps (base manifest, before-content).
 */
export function referencedArtifacts(records: readonly AnyRecord[]): string[] {
  const ids: string[] = [];
  const visit = (value: unknown): void => {
    if (typeof value !== "object" || value === null) return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    for (const [key, inner] of Object.entries(value)) {
      const id =
        key === "artifact" && typeof inner === "object" && inner !== null
          ? (inner as { id?: unknown }).id
          : undefined;
      if (typeof id === "string") ids.push(id);
      else visit(inner);
    }
  };
  for (const record of records) {
    if (record.type === "tool.result") visit(record.data);
    // The workspace record: its base manifest, and the bytes every change replaced (what an undo restores).
    else if (record.type === "workspace.base") ids.push(record.data.manifest);
    else if (record.type === "workspace.changed") ids.push(...beforeHashes(record.data));
  }
  return ids;
}

/** One session's verification, with its sub-agents' (recursively). */
interface SessionCheck {
  session: string;
  ok: boolean;
  /** Human lines saying what is wrong, or that it is intact. */
  lines: string[];
  /** The `--json` body: this session's own result, then `children` and `head_mismatches`. */
  body: Record<string, unknown>;
}

/**
 * Verify a session, then each sub-agent it started (from its `agent.started` records and the
 * folders beside its journal), down to the deepest, and that every `agent.finished.head_hash`
 * is the child journal's last record: a child altered, cut or appended to after its parent
 * recorded its end fails the parent too, named.
 */
async function checkSession(source: JournalSource, sessionId: string): Promise<SessionCheck> {
  const result = await source.verify(sessionId);
  if (!result.ok) {
    return {
      session: sessionId,
      ok: false,
      body: { session: sessionId, ...result },
      lines: [
        `journal ${sessionId}: ${result.code}: ${escapeForTerminal(result.message)}`,
        `the first ${result.validRecords} records are valid; repair with: harness journal repair ${sessionId}`,
      ],
    };
  }
  const trust = assessTrust(result.records, source.store.key, sessionId);
  const artifactsDir = source.artifactsDir(sessionId);
  const artifacts = artifactsDir
    ? await checkArtifacts(artifactsDir, referencedArtifacts(result.records))
    : { intact: 0, modified: [], missing: [] };
  const artifactsOk = artifacts.modified.length === 0 && artifacts.missing.length === 0;
  const lines: string[] = [];
  if (!trust.trusted) lines.push(`journal ${sessionId}: UNTRUSTED: ${escapeForTerminal(trust.message)}`);
  for (const id of artifacts.modified) {
    lines.push(
      `journal ${sessionId}: artifact ${escapeForTerminal(id)} was modified: its bytes no longer have that SHA-256`,
    );
  }
  for (const id of artifacts.missing) {
    lines.push(
      `journal ${sessionId}: artifact ${escapeForTerminal(id)} is referenced by the journal but missing`,
    );
  }

  const state = SessionState.from(result.records);
  const childIds = new Set(await source.store.listChildren(sessionId));
  for (const agent of state.agents.values()) childIds.add(agent.started.child_session);
  const children: SessionCheck[] = [];
  const mismatches: { child_session: string; recorded: string | null; actual: string | null }[] = [];
  for (const childId of [...childIds].sort()) {
    const exists = await source.store.exists(childId);
    const finished = [...state.agents.values()].find((a) => a.started.child_session === childId)?.finished;
    const child: SessionCheck = exists
      ? await checkSession(source, childId)
      : absentChild(sessionId, childId, finished);
    children.push(child);
    if (finished === undefined || !exists) continue;
    const read = await source.verifiedPrefix(childId);
    const actual = read.records.at(-1)?.hash ?? null;
    if (read.result.ok && actual !== finished.head_hash) {
      mismatches.push({ child_session: childId, recorded: finished.head_hash, actual });
      lines.push(
        `journal ${sessionId}: sub-agent ${childId} does not end where this session recorded it ended: ` +
          `agent.finished records head ${finished.head_hash ?? "none"}, its journal ends at ${actual ?? "no record"}`,
      );
    }
  }
  const childrenOk = children.every((child) => child.ok) && mismatches.length === 0;
  for (const child of children) {
    if (!child.ok) lines.push(`journal ${sessionId}: sub-agent ${child.session} fails verification`);
  }
  const ok = trust.trusted && artifactsOk && childrenOk;
  if (trust.trusted && artifactsOk) {
    const checked = artifactsDir
      ? `${artifacts.intact} artifact(s) match their SHA-256`
      : "artifacts not checked: name the workspace that holds them with --workspace DIR";
    const agents = children.length > 0 ? `; ${children.length} sub-agent journal(s) checked` : "";
    lines.push(
      `journal ${sessionId}: ${childrenOk ? "intact" : "own records intact"} (${result.records.length} records, authenticated by your key; ${checked}${agents})`,
    );
  }
  const body = {
    session: sessionId,
    ok,
    records: result.records.length,
    trusted: trust.trusted,
    ...(trust.trusted ? {} : { code: "UNTRUSTED", problem: trust.problem, message: trust.message }),
    artifacts,
    ...(artifactsDir ? {} : { artifacts_checked: false }),
    children: children.map((child) => child.body),
    head_mismatches: mismatches,
  };
  // A child's own lines come after its parent's, so the first line names the session asked about.
  return { session: sessionId, ok, body, lines: [...lines, ...children.flatMap((child) => child.lines)] };
}

/**
 * A sub-agent its parent records starting that has no journal. Absent is correct when the child
 * recorded nothing: its parent records it ended with no head (it failed before its first record),
 * or records no end at all (the parent stopped, a crash included, before the child's journal was
 * made). An unfinished child's journal is not yet vouched for by its parent, so its absence is
 * the empty case of the shorter chain a crash may leave. A recorded head with no journal is loss.
 */
function absentChild(
  sessionId: string,
  childId: string,
  finished: EventData<"agent.finished"> | undefined,
): SessionCheck {
  if (finished !== undefined && finished.head_hash !== null) {
    return {
      session: childId,
      ok: false,
      body: { session: childId, ok: false, code: "SESSION_NOT_FOUND" },
      lines: [
        `journal ${childId}: missing: its parent ${sessionId} records it ending at ${finished.head_hash}`,
      ],
    };
  }
  const why =
    finished === undefined
      ? `its parent ${sessionId} records starting it and no end (stopped before its first record)`
      : `its parent ${sessionId} records it ended (${finished.outcome}) before its first record`;
  return {
    session: childId,
    ok: true,
    body: { session: childId, ok: true, records: 0, absent: true },
    lines: [`journal ${childId}: no records: ${why}`],
  };
}

async function verify(source: JournalSource, sessionId: string, json: boolean): Promise<number> {
  const check = await checkSession(source, sessionId);
  process.stdout.write(json ? `${jsonForTerminal(check.body)}\n` : `${check.lines.join("\n")}\n`);
  return check.ok ? EXIT.ok : EXIT.journalRefused;
}

/** What resuming the session would do with the user's machine and credentials, for the person to judge. */
function adoptionLines(facts: AdoptionFacts | undefined): string[] {
  if (!facts) return ["  (no session.started record: resuming would run nothing recorded)"];
  const text = (value: unknown) => (typeof value === "string" ? escapeForTerminal(value) : "(none)");
  const acceptance =
    facts.acceptance.length > 0 ? facts.acceptance.map((c) => `    ${escapeForTerminal(c)}`) : ["    (none)"];
  return [
    `  goal:                ${escapeForTerminal(facts.goal)}`,
    "  acceptance commands (run on resume, in your workspace):",
    ...acceptance,
    `  provider:            ${text(facts.provider)}  model: ${text(facts.model)}`,
    `  base URL:            ${text(facts.base_url)}  (your API key would be sent there)`,
    `  key variable:        ${text(facts.api_key_env)}`,
    `  policy flags:        ${jsonForTerminal(facts.policy_flags)}`,
    `  recorded key id:     ${text(facts.recorded_key_id)}`,
  ];
}

async function askYes(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    return /^\s*(y|yes)\s*$/i.test(answer);
  } catch {
    return false;
  } finally {
    rl.close();
  }
}

async function adopt(
  workspace: OpenedWorkspace,
  sessionId: string,
  options: { yes: boolean; json: boolean },
): Promise<number> {
  const reviewed = await reviewAdoption(workspace.store, sessionId);
  const { trust } = reviewed;
  if (trust.trusted) {
    const message = `session ${sessionId} is already trusted: it authenticates under your journal key; nothing to adopt`;
    process.stdout.write(
      options.json
        ? `${jsonForTerminal({ session: sessionId, adopted: false, trusted: true })}\n`
        : `${message}\n`,
    );
    return EXIT.ok;
  }
  process.stderr.write(
    `session ${sessionId} is not trusted: ${escapeForTerminal(trust.message)}\n\n` +
      `Adopting it means harness treats it as yours. Resuming it would:\n${adoptionLines(reviewed.facts).join("\n")}\n\n`,
  );
  if (!options.yes) {
    const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
    if (!interactive) {
      process.stderr.write(
        `harness journal adopt: refused: no terminal to ask on; after checking the above, run it again with --yes\n`,
      );
      return EXIT.journalRefused;
    }
    if (!(await askYes(`Adopt session ${sessionId}? Only y or yes adopts: `))) {
      process.stderr.write("not adopted; nothing was changed\n");
      return EXIT.journalRefused;
    }
  }
  const adopted = await adoptSession(workspace.store, sessionId, reviewed, userInfo().username);
  if (options.json) {
    process.stdout.write(
      `${jsonForTerminal({ session: sessionId, adopted: true, head_hash: adopted.headHash, records: adopted.records, ...reviewed.facts })}\n`,
    );
  } else {
    process.stdout.write(
      `session ${sessionId}: adopted (vouched for ${adopted.records} records up to ${adopted.headHash.slice(0, 12)}); ` +
        `continue with: ${escapeForTerminal(resumeCommand(sessionId, workspace, unrecordedPlaceholders(reviewed.state.provider)))}\n`,
    );
  }
  return EXIT.ok;
}

export const journalCommand = {
  help: JOURNAL_HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      database: { type: "string" },
      json: { type: "boolean" },
      yes: { type: "boolean" },
      ...LAST_OPTION,
    });
    const [action, given] = positionals;
    if (action !== "verify" && action !== "repair" && action !== "adopt")
      throw new UsageError("expected: harness journal verify|repair|adopt SESSION");
    if (values.yes && action !== "adopt") throw new UsageError("--yes applies to harness journal adopt only");
    if (action === "verify") {
      const sessionId = await sessionIdFromArgs(values, given, values.last, "harness journal verify SESSION");
      const source = await openSessionSource(values, sessionId, {
        withArtifacts: true,
        notify: stderrNotices,
      });
      return verify(source, sessionId, values.json === true);
    }
    if (values.database !== undefined)
      throw new UsageError("--database applies to harness journal verify only");
    const { workspace, sessionId } = await sessionFromArgs(
      values.workspace,
      given,
      values.last,
      `harness journal ${action} SESSION`,
    );
    if (action === "adopt")
      return adopt(workspace, sessionId, { yes: values.yes === true, json: values.json === true });
    const repaired = await repairJournal(workspace.harnessDir, sessionId);
    if (values.json) {
      process.stdout.write(`${jsonForTerminal({ session: sessionId, ...repaired })}\n`);
    } else if (repaired.backup === null) {
      process.stdout.write(
        `journal ${sessionId}: intact, nothing to repair (${repaired.keptRecords} records)\n`,
      );
    } else {
      process.stdout.write(
        `journal ${sessionId}: kept ${repaired.keptRecords} records, dropped ${repaired.droppedLines} line(s) ` +
          `(${repaired.droppedBytes} bytes)\nbackup: ${escapeForTerminal(repaired.backup)}\n`,
      );
    }
    return EXIT.ok;
  },
};

export const unlockCommand = {
  help: UNLOCK_HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      database: { type: "string" },
      force: { type: "boolean" },
      ...LAST_OPTION,
    });
    const sessionId = await sessionIdFromArgs(values, positionals[0], values.last, "harness unlock SESSION");
    const source = await openSessionSource(values, sessionId, { notify: stderrNotices });
    let result: UnlockResult;
    try {
      result = await source.unlock(sessionId, { force: values.force === true });
    } finally {
      await source.close();
    }
    switch (result.outcome) {
      case "no_lock":
        process.stdout.write(`session ${sessionId}: not locked\n`);
        return EXIT.ok;
      case "removed": {
        const owner = result.status.owner
          ? escapeForTerminal(describeOwner(result.status.owner))
          : "an unreadable owner";
        process.stdout.write(
          `session ${sessionId}: removed the lock of ${owner}${result.forced ? " (forced)" : ""}\n`,
        );
        return EXIT.ok;
      }
      case "refused":
        process.stderr.write(`${escapeForTerminal(result.message)}\n`);
        return EXIT.journalRefused;
    }
  },
};
