import { createHash } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import path from "node:path";
import { definitionDigest, type McpServerDefinition } from "./config.js";
import { serverNamedFiles } from "./named-files.js";

/**
 * What approving a project's MCP server proposal covers: exactly what the user looked at. That is
 * the workspace it was proposed in (its real path), the definition (its digest) and the content of
 * every file the definition names (their SHA-256), so the same proposal shipped by another
 * repository, or the same definition running an edited script, is not approved. The binding is
 * computed again immediately before every start of the server (first start, restart, reconnect).
 */

/** One approval as `harness mcp approve` records it under `mcp_approvals.NAME` (a list of these). */
export interface ApprovalBinding {
  /** The workspace's real path. */
  workspace: string;
  /** definitionDigest of the approved definition. */
  definition: string;
  /** Every file the definition names (absolute path) with the SHA-256 of its content. */
  files: Record<string, string>;
}

/**
 * What the user config holds for one name: a list of bindings, or (from harness versions before
 * the binding) a bare definition digest, which no longer approves anything.
 */
export type RecordedApproval = string | readonly ApprovalBinding[] | undefined;

export type ApprovalVerdict =
  | { approved: true; binding: ApprovalBinding }
  | {
      approved: false;
      binding: ApprovalBinding;
      /** Why the approval does not cover this proposal here, for the user. */
      reason: string;
      /** `none`: never approved; `legacy`: approved unbound; `workspace`: approved elsewhere only; `changed`: what was approved here changed. */
      kind: "none" | "legacy" | "workspace" | "changed";
    };

const HEX64 = /^[0-9a-f]{64}$/;
/** Digests of files read in this process, by identity and change time. */
const digests = new Map<string, string>();
const CHUNK = 1024 * 1024;

/** The binding of `definition` as proposed in `workspace` (a real path) now: its digest and its files' hashes. */
export function currentBinding(definition: McpServerDefinition, workspace: string): ApprovalBinding {
  const files: Record<string, string> = {};
  for (const file of serverNamedFiles([definition], workspace)) files[file] = fileDigest(file);
  return { workspace, definition: definitionDigest(definition), files };
}

/** Whether `recorded` approves the proposal whose binding is `current`, and if not, why. */
export function judgeApproval(recorded: RecordedApproval, current: ApprovalBinding): ApprovalVerdict {
  if (recorded === undefined) {
    return { approved: false, binding: current, kind: "none", reason: "you have not approved it" };
  }
  if (typeof recorded === "string") {
    return {
      approved: false,
      binding: current,
      kind: "legacy",
      reason:
        "your approval of it was recorded by an earlier harness, bound to no workspace and to none of the files it runs, " +
        "so it no longer approves anything; approve it again here",
    };
  }
  const here = recorded.find((entry) => entry.workspace === current.workspace);
  if (here === undefined) {
    return {
      approved: false,
      binding: current,
      kind: recorded.length === 0 ? "none" : "workspace",
      reason:
        recorded.length === 0
          ? "you have not approved it"
          : `you approved a server of this name only in ${recorded.length === 1 ? "another workspace" : "other workspaces"} ` +
            `(${recorded.map((entry) => entry.workspace).join(", ")}); an approval covers only the workspace it was given in`,
    };
  }
  const changes: string[] = [];
  if (here.definition !== current.definition) changes.push("its definition changed");
  for (const change of fileChanges(here.files, current.files, current.workspace)) changes.push(change);
  if (changes.length === 0) return { approved: true, binding: current };
  return {
    approved: false,
    binding: current,
    kind: "changed",
    reason: `what you approved changed since: ${changes.join("; ")}`,
  };
}

/** The recorded approvals of one name with `binding` added, replacing any earlier one for its workspace. */
export function withApproval(recorded: RecordedApproval, binding: ApprovalBinding): ApprovalBinding[] {
  const kept = typeof recorded === "string" || recorded === undefined ? [] : recorded;
  return [...kept.filter((entry) => entry.workspace !== binding.workspace), binding];
}

/** A file as the user is shown it: relative to the workspace when inside it. */
export function shownPath(file: string, workspace: string): string {
  const relative = path.relative(workspace, file);
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative) ? relative : file;
}

function fileChanges(
  approved: Readonly<Record<string, string>>,
  now: Readonly<Record<string, string>>,
  workspace: string,
): string[] {
  const changes: string[] = [];
  for (const file of [...new Set([...Object.keys(approved), ...Object.keys(now)])].sort()) {
    const was = approved[file];
    const is = now[file];
    const shown = shownPath(file, workspace);
    if (was === undefined) changes.push(`${shown} is a file it now runs that was not there`);
    else if (is === undefined) changes.push(`${shown} is gone`);
    else if (!HEX64.test(is)) changes.push(`${shown} cannot be read (${is})`);
    else if (was !== is) changes.push(`${shown} was modified`);
  }
  return changes;
}

/**
 * SHA-256 of a file's content, read in chunks (what running it would run, links followed); a file
 * that cannot be read is a value that never matches a digest.
 */
function fileDigest(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (error) {
    return `unreadable: ${(error as NodeJS.ErrnoException).code ?? "error"}`;
  }
  try {
    // A file read before in this process, unchanged since by its identity and change time (which
    // every write moves, and no one can set back), is not read again: a server named by an
    // absolute interpreter path would otherwise be hashed whole before every start.
    const stat = fstatSync(fd, { bigint: true });
    const key = `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
    const known = digests.get(key);
    if (known !== undefined) return known;
    const hash = createHash("sha256");
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const read = readSync(fd, buffer, 0, CHUNK, null);
      if (read === 0) break;
      hash.update(buffer.subarray(0, read));
    }
    const digest = hash.digest("hex");
    digests.set(key, digest);
    return digest;
  } catch (error) {
    return `unreadable: ${(error as NodeJS.ErrnoException).code ?? "error"}`;
  } finally {
    closeSync(fd);
  }
}
