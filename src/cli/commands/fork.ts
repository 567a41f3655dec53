import { cp } from "node:fs/promises";
import { join } from "node:path";
import { forkSession } from "../../engine/fork.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { UsageError } from "../usage-error.js";
import { newSessionId, type OpenedWorkspace, openSession } from "../workspace.js";
import { validateSessionId } from "./run.js";

const HELP = `Usage: harness fork SESSION [--at SEQ] [--workspace DIR] [--session NEW_ID] [--json]

Start a new session from SESSION's history: all of it, or its records up to and including
record SEQ (the numbers harness inspect shows). The new session's journal starts by naming its
parent and the hash of the parent's record SEQ, then holds that history as its own, so it
verifies alone (harness journal verify NEW_ID). The parent is never modified. Continue the fork
with: harness run --session NEW_ID PROMPT.

A SEQ inside a running call (its tool.started recorded, its result not yet) is refused.

Options:
  --at SEQ                   the last record of SESSION to keep (default: its last)
  --workspace, -w DIR        the workspace (default: the current directory)
  --session NEW_ID           the new session's id (default: a fresh one)
  --json                     print {session, parent, at_seq, at_hash, copied} on stdout

Exit codes: 0 forked, 5 the parent's journal is refused (not recorded by you, torn, tampered),
64 usage error.`;

export const forkCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, {
      workspace: { type: "string", short: "w" },
      at: { type: "string" },
      session: { type: "string" },
      json: { type: "boolean" },
    });
    const [parent, ...extra] = positionals;
    if (!parent)
      throw new UsageError(
        "which session? harness fork SESSION [--at SEQ] (list them with: harness sessions)",
      );
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
    validateSessionId(parent);
    const at = values.at === undefined ? undefined : seqOf(values.at);
    const child = values.session ?? newSessionId();
    validateSessionId(child);
    const workspace = await openSession(values.workspace, parent);
    const forked = await forkWithArtifacts(workspace, parent, child, at);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ ...forked, workspace: workspace.root })}\n`);
    } else {
      process.stdout.write(
        `forked session ${forked.session} from ${parent} at record ${forked.at_seq} (hash ${forked.at_hash.slice(0, 12)}); ` +
          `continue with: harness run --session ${forked.session} --workspace ${workspace.root} PROMPT\n`,
      );
    }
    return EXIT.ok;
  },
};

/**
 * Fork a workspace's session (harness fork, the chat's /fork): the journal, and the artifacts its
 * history points to (previews' full output, pruned results), copied beside it.
 */
export async function forkWithArtifacts(
  workspace: OpenedWorkspace,
  parent: string,
  child: string,
  at: number | undefined,
): Promise<Awaited<ReturnType<typeof forkSession>>> {
  const forked = await forkSession(workspace.backend, parent, child, at);
  await cp(join(workspace.sessionDir(parent), "artifacts"), join(workspace.sessionDir(child), "artifacts"), {
    recursive: true,
    errorOnExist: false,
    force: false,
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
  return forked;
}

function seqOf(value: string): number {
  if (!/^[0-9]{1,9}$/.test(value))
    throw new UsageError(`--at must be a record number (see harness inspect), got "${value}"`);
  return Number(value);
}
