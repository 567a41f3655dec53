import { readdirSync } from "node:fs";
import path from "node:path";
import { enclosingStateDir } from "../workspace/enclosing-state.js";
import { RESERVED_DIR } from "../workspace/fs.js";
import { isWithin, maskArguments, type ShownRoot } from "./host-view.js";
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
  /** The workspace's canonical path (mounted at itself). */
  workspace: string;
  /** Host paths of harness's credentials and state, files or directories. */
  secrets: readonly string[];
  /** Everything else the layout mounts of the host, at every place it shows it. */
  roots: readonly ShownRoot[];
  /** Host paths (canonical) shown on purpose even inside a secret directory. */
  keep: readonly string[];
}

/** bwrap arguments that hide harness's state and credentials; they come after every other mount. */
export function secretMasks(input: SecretMaskInput): string[] {
  const args: string[] = [];
  const done = new Set<string>();
  const mask = (at: string) => {
    if (done.has(at)) return;
    done.add(at);
    args.push(...maskArguments(at));
  };
  // `real` is the host path, `at` where the sandbox shows it: covered whole, or entry by entry
  // around what must stay visible.
  const hide = (real: string, at: string): void => {
    const inside = input.keep.filter((kept) => kept !== real && isWithin(kept, real));
    if (inside.length === 0) {
      mask(at);
      return;
    }
    for (const name of entriesOf(real)) {
      const child = path.join(real, name);
      if (inside.includes(child)) continue;
      if (inside.some((kept) => isWithin(kept, child))) hide(child, path.join(at, name));
      else mask(path.join(at, name));
    }
  };
  const roots: ShownRoot[] = [...input.roots, { source: input.workspace, at: input.workspace }];
  for (const secret of [path.join(input.workspace, RESERVED_DIR), ...input.secrets]) {
    // What does not exist cannot be read; a link is hidden where it leads.
    const real = realOrUndefined(path.resolve(secret));
    if (real === undefined) continue;
    for (const root of roots) {
      if (isWithin(real, root.source)) hide(real, path.join(root.at, path.relative(root.source, real)));
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
