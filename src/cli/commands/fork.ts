import { mkdir, readdir, realpath, rm, rmdir, stat } from "node:fs/promises";
import { join, resolve, sep } from "node:path";
import { FileArtifactStore } from "../../artifacts/file-store.js";
import type { ForkResult } from "../../engine/fork.js";
import { forkWithArtifacts } from "../../session/operations/fork.js";
import { validateRootSessionId } from "../../session/session-id.js";
import { UsageError } from "../../session/usage-error.js";
import { keptObjects, newSessionId, type OpenedWorkspace, openWorkspace } from "../../session/workspace.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { TreePathError } from "../../undo/disk.js";
import { checkTree, MaterializeError, materializeTree } from "../../undo/materialize.js";
import { ReplayError, recordedBase, replayTree } from "../../undo/replay.js";
import { BeneathError, HeldDir } from "../../workspace/beneath.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { stderrNotices } from "../notices.js";
import { LAST_OPTION, sessionFromArgs } from "../session-id.js";

const HELP = `Usage: harness fork SESSION [--at SEQ] [--into DIR] [--workspace DIR] [--session NEW_ID] [--json]

Start a new session from SESSION's history: all of it, or its records up to and including
record SEQ (the numbers harness inspect shows). The new session's journal starts by naming its
parent and the hash of the parent's record SEQ, then holds that history as its own, so it
verifies alone (harness journal verify NEW_ID). The parent is never modified. Continue the fork
with: harness run --session NEW_ID PROMPT.

A SEQ inside a running call (its tool.started recorded, its result not yet) is refused.

Options:
  SESSION                    the session's id or a unique start of it; --last: the latest
  --at SEQ                   the last record of SESSION to keep (default: its last)
  --workspace, -w DIR        the workspace (default: the current directory)
  --session NEW_ID           the new session's id (default: a fresh one)
  --into DIR                 start the fork in its own workspace DIR (absent or empty): DIR gets
                             the parent's files exactly as they were at record SEQ (its recorded
                             base plus every recorded change up to SEQ), and the fork's journal
                             lives in DIR/.harness; continue it with --workspace DIR. FIFOs,
                             sockets and devices, and git metadata below the root, are not
                             written (listed as left out). Anything that fails leaves DIR as it
                             was (removed again when this made it)
  --json                     print {session, parent, at_seq, at_hash, copied, workspace} on stdout
                             (with --into also files, bytes, left_out)

Exit codes: 0 forked, 5 the parent's journal is refused (not recorded by you, torn, tampered),
64 usage error (also: --into a directory that is not empty, or a session recorded before harness
recorded workspaces, or a file whose content then is recorded nowhere any more or only by its size,
or a recorded tree no directory could hold: an entry below a link).`;

export const forkCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      at: { type: "string" },
      session: { type: "string" },
      into: { type: "string" },
      json: { type: "boolean" },
      ...LAST_OPTION,
    });
    const [given, ...extra] = positionals;
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
    const at = values.at === undefined ? undefined : seqOf(values.at);
    const child = values.session ?? newSessionId();
    validateRootSessionId(child);
    const { workspace, sessionId: parent } = await sessionFromArgs(
      values.workspace,
      given,
      values.last,
      "harness fork SESSION [--at SEQ]",
    );
    const into = values.into === undefined ? undefined : await intoDirectory(values.into, workspace.root);
    const forked = into
      ? await forkInto(workspace, parent, child, at, into)
      : await forkWithArtifacts(workspace, parent, child, at);
    const home = into?.real ?? workspace.root;
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ ...forked, workspace: home })}\n`);
    } else {
      const leftOut = "left_out" in forked ? (forked.left_out as string[]).length : 0;
      const left = leftOut > 0 ? ` (${leftOut} special file(s) or git metadata left out)` : "";
      const tree = "files" in forked ? `; its tree (${forked.files} files) written to ${home}${left}` : "";
      process.stdout.write(
        `forked session ${forked.session} from ${parent} at record ${forked.at_seq} (hash ${forked.at_hash.slice(0, 12)})${escapeForTerminal(tree)}; ` +
          `continue with: harness run --session ${forked.session} --workspace ${escapeForTerminal(home)} PROMPT\n`,
      );
    }
    return EXIT.ok;
  },
};

function seqOf(value: string): number {
  if (!/^[0-9]{1,9}$/.test(value))
    throw new UsageError(`--at must be a record number (see harness inspect), got "${value}"`);
  return Number(value);
}

/** `--into DIR`: absent (made here) or an empty directory, and not inside the parent's workspace. */
async function intoDirectory(dir: string, parentRoot: string): Promise<{ real: string; made: boolean }> {
  const target = resolve(dir);
  const info = await stat(target).catch(() => undefined);
  if (info !== undefined && !info.isDirectory()) throw new UsageError(`--into ${dir} is not a directory`);
  if (info !== undefined && (await readdir(target)).length > 0)
    throw new UsageError(`--into ${dir} is not empty: name a new or an empty directory`);
  const real = await realpath(target).catch(() => undefined);
  if (real !== undefined && (real === parentRoot || real.startsWith(`${parentRoot}${sep}`)))
    throw new UsageError(`--into ${dir} is inside the session's workspace; name a directory outside it`);
  if (info !== undefined && real !== undefined) return { real, made: false };
  await mkdir(target, { recursive: true });
  const made = await realpath(target);
  if (made === parentRoot || made.startsWith(`${parentRoot}${sep}`)) {
    await rmdir(made).catch(() => undefined);
    throw new UsageError(`--into ${dir} is inside the session's workspace; name a directory outside it`);
  }
  return { real: made, made: true };
}

/**
 * The fork in its own workspace: the journal and artifacts in DIR/.harness, and DIR holding the
 * parent's tree at the fork point. The recorded tree is checked before anything is written; any
 * failure after that leaves DIR as it was (removed when it was made here).
 */
async function forkInto(
  workspace: OpenedWorkspace,
  parent: string,
  child: string,
  at: number | undefined,
  into: { real: string; made: boolean },
): Promise<ForkResult & { files: number; bytes: number; left_out: string[] }> {
  const dir = into.real;
  try {
    const records = await workspace.store.read(parent);
    const artifacts = new FileArtifactStore(join(workspace.sessionDir(parent), "artifacts"));
    const { tree, directories } = await recordedBase(records, artifacts);
    const seq = at ?? records.length - 1;
    const target = replayTree(tree, records, seq);
    checkTree(target);
    const opened = await openWorkspace(dir, { notify: stderrNotices });
    const forked = await forkWithArtifacts(workspace, parent, child, at, opened);
    const written = await materializeTree(
      target,
      { artifacts, kept: keptObjects(workspace), workspaceRoot: workspace.root },
      dir,
      { directories },
    );
    return { ...forked, ...written };
  } catch (error) {
    await emptyAgain(dir, into.made);
    if (
      error instanceof ReplayError ||
      error instanceof MaterializeError ||
      error instanceof TreePathError ||
      error instanceof BeneathError
    )
      throw new UsageError(
        `cannot write the tree of ${parent} into ${dir}: ${error.message}; nothing was written`,
      );
    throw error;
  }
}

/**
 * Remove what a failed fork wrote into DIR, through a descriptor held on DIR itself: should DIR
 * have been swapped for a link meanwhile, nothing where it leads is touched.
 */
async function emptyAgain(dir: string, made: boolean): Promise<void> {
  let held: HeldDir;
  try {
    held = HeldDir.openRoot(dir);
  } catch {
    return;
  }
  try {
    for (const name of held.list()) await rm(held.at(name), { recursive: true, force: true });
  } finally {
    held.close();
  }
  if (made) await rmdir(dir).catch(() => undefined);
}
