import picomatch from "picomatch";
import {
  checkGlobPattern,
  globMatcher,
  isReservedParts,
  isValidComponent,
  quote,
} from "../../workspace/boundary.js";
import type { DiskWorkspaceFs } from "../../workspace/disk-fs.js";
import { WorkspaceError } from "../../workspace/fs.js";
import { compareCodeUnits } from "../../workspace/order.js";
import { listFiles } from "./search/ripgrep.js";

/**
 * glob on a disk workspace with `rg --files` doing the directory walk: the same answer as
 * `DiskWorkspaceFs.glob` (its checks, errors and rules, repeated here in its order), only faster
 * on a large tree. What both list: regular files below the directory, hidden ones included, no
 * .gitignore applied, `.git` listed, the root's `.harness` never, symbolic links neither listed
 * nor followed. Because rg follows no link below its (canonical) start, every path it names lies
 * inside the workspace, so the per-path realpath check of the crawl is not needed here.
 */
export async function globViaRipgrep(
  fs: DiskWorkspaceFs,
  rg: string,
  pattern: string,
  cwdInput: string,
  signal: AbortSignal,
): Promise<string[]> {
  const normalized = checkGlobPattern(pattern);
  const cwd = await fs.resolve(cwdInput);
  const stat = await fs.stat(cwdInput);
  if (stat === undefined)
    throw new WorkspaceError("NOT_FOUND", cwdInput, `${quote(cwdInput)} does not exist`);
  if (stat.kind !== "directory") {
    throw new WorkspaceError("NOT_A_DIRECTORY", cwdInput, `${quote(cwdInput)} is not a directory`);
  }
  // The literal prefix before the first wildcard is checked like any path (PATH_ESCAPE for
  // `link-out/*.txt`), exactly as the crawl does, although rg would not follow that link anyway.
  const base = picomatch.scan(normalized).base;
  if (base !== "") await fs.resolve(prefixed(cwd, base));

  const listed = await listFiles({ rg, root: fs.hostRoot, start: cwd, signal });
  const matches = globMatcher(normalized);
  const cut = cwd === "." ? 0 : cwd.length + 1;
  const found: string[] = [];
  // Many matches share a directory: its components are checked once.
  const validDirs = new Set<string>();
  for (const relative of listed) {
    if (!matches(relative.slice(cut))) continue;
    const slash = relative.lastIndexOf("/");
    const dir = slash < 0 ? "" : relative.slice(0, slash);
    const name = relative.slice(slash + 1);
    if (!isValidComponent(name) || (dir === "" && isReservedParts([name]))) continue;
    if (dir !== "" && !validDirs.has(dir)) {
      const parts = dir.split("/");
      if (!parts.every(isValidComponent) || isReservedParts(parts)) continue;
      validDirs.add(dir);
    }
    found.push(relative);
  }
  return found.sort(compareCodeUnits);
}

function prefixed(dir: string, relative: string): string {
  return dir === "." ? relative : `${dir}/${relative}`;
}
