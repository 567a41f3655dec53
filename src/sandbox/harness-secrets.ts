import { readdirSync } from "node:fs";
import path from "node:path";
import { enclosingStateDir } from "../workspace/enclosing-state.js";
import { RESERVED_DIR } from "../workspace/fs.js";
import { isWithin, maskArguments } from "./host-view.js";
import { realOrUndefined } from "./stat.js";

/**
 * What no sandboxed process may see: harness's own state and credentials. The sandbox layout
 * hides, after everything else is mounted, so no later mount shows them again:
 *
 * - the workspace's `.harness` (every session's journal, artifacts and kept file copies: another
 *   identity's sessions on a shared workspace, content the current policy would refuse), as an
 *   empty read-only directory, in every profile. Nothing a sandboxed process legitimately does
 *   needs it: output capture, locks and the record all run in harness itself, on the host;
 * - the host paths the composition root names (`secrets`): the journal key, the server's tokens
 *   file, the user config and its directory. Each is covered wherever the layout shows it (inside
 *   the workspace, a toolchain directory, a read path), by its path as given and by its real path:
 *   a file by an empty file, a directory by an empty read-only tmpfs;
 * - a workspace that lies inside another workspace's `.harness` (see enclosing-state.ts): all of it.
 *
 * A secret directory that holds something the layout shows on purpose (`keep`: the workspace, a
 * hook script the user config names) is not covered whole: its other entries are, so the kept path
 * stays usable and nothing beside it shows.
 */

export interface SecretMaskInput {
  /** The workspace's canonical path. */
  workspace: string;
  /** Host paths of harness's credentials and state, files or directories. */
  secrets: readonly string[];
  /** Every host path the layout mounts (its mount roots); a secret outside all of them is unseen. */
  roots: readonly string[];
  /** Mount roots shown on purpose even inside a secret directory. */
  keep: readonly string[];
}

/** bwrap arguments that hide harness's state and credentials; they come after every other mount. */
export function secretMasks(input: SecretMaskInput): string[] {
  const args: string[] = [];
  const done = new Set<string>();
  const mask = (target: string) => {
    if (done.has(target)) return;
    done.add(target);
    args.push(...maskArguments(target));
  };
  const hide = (target: string): void => {
    const inside = input.keep.filter((kept) => kept !== target && isWithin(kept, target));
    if (inside.length === 0) {
      mask(target);
      return;
    }
    for (const name of entriesOf(target)) {
      const child = path.join(target, name);
      if (inside.includes(child)) continue;
      if (inside.some((kept) => isWithin(kept, child))) hide(child);
      else mask(child);
    }
  };
  const shown = (target: string) => input.roots.some((root) => isWithin(target, root));
  for (const secret of [path.join(input.workspace, RESERVED_DIR), ...input.secrets]) {
    const given = path.resolve(secret);
    for (const at of new Set([given, realOrUndefined(given) ?? given])) {
      if (shown(at)) hide(at);
    }
  }
  if (enclosingStateDir(input.workspace) !== undefined) mask(input.workspace);
  return args;
}

function entriesOf(directory: string): string[] {
  try {
    return readdirSync(directory).sort();
  } catch {
    return [];
  }
}
