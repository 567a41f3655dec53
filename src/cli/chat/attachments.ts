import { isAbsolute, relative } from "node:path";
import { normalizeSubjectPath } from "../../policy/rules.js";
import type { PermissionPort } from "../../runtime/ports.js";
import { listCandidates } from "../../tools/files/search/walk.js";
import type { WorkspaceFs } from "../../workspace/fs.js";
import { DEFAULT_PROTECTED_PATHS } from "../../workspace/protected.js";

/**
 * `@path` in chat input: the file's content goes with the message. The message the turn starts
 * with (or the steer) is the typed text followed by each attached file in an `<attached>` block,
 * so the journal's `user.input` (or `user.steered`) records exactly what the model was given.
 *
 * Only what the model could read itself is attached: a path inside the workspace, not protected
 * (`.git`, `.harness`, the project config), and one the policy lets read_file read without asking
 * (the built-in rules ask about `.env`, keys and other secret-looking files; a symlink is decided
 * under the file it leads to). The workspace fs reads it, which never follows a link out.
 */

/** One file's bytes at most; a bigger file is refused, not cut (a cut file misleads). */
export const ATTACH_MAX_BYTES = 256 * 1024;
/** All the files of one message together. */
export const ATTACH_TOTAL_BYTES = 1024 * 1024;
/** How many workspace files completion offers to choose from at most. */
const COMPLETION_FILES = 20_000;

/** `@` at the start of the input or after a blank, then a path (no blanks). */
const MENTION = /(^|\s)@([^\s@]+)/g;

export interface Attachment {
  path: string;
  bytes: number;
}

export type Expanded = { ok: true; text: string; attached: Attachment[] } | { ok: false; problems: string[] };

export interface AttachmentSource {
  root: string;
  fs: WorkspaceFs;
  permissions: PermissionPort;
}

/** The message with every `@path` attached, or why one of them cannot be. */
export async function expandAttachments(text: string, source: AttachmentSource): Promise<Expanded> {
  const paths = [...new Set([...text.matchAll(MENTION)].map((match) => match[2] as string))];
  if (paths.length === 0) return { ok: true, text, attached: [] };
  const problems: string[] = [];
  const blocks: string[] = [];
  const attached: Attachment[] = [];
  let total = 0;
  for (const given of paths) {
    const read = await readAttachment(given, source);
    if ("problem" in read) {
      problems.push(`@${given}: ${read.problem}`);
      continue;
    }
    total += read.bytes;
    if (total > ATTACH_TOTAL_BYTES) {
      problems.push(`@${given}: the attached files together are over ${ATTACH_TOTAL_BYTES} bytes`);
      continue;
    }
    attached.push({ path: read.path, bytes: read.bytes });
    blocks.push(`<attached file="${read.path}" bytes="${read.bytes}">\n${read.text}\n</attached>`);
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, text: `${text}\n\n${blocks.join("\n\n")}`, attached };
}

async function readAttachment(
  given: string,
  source: AttachmentSource,
): Promise<{ path: string; text: string; bytes: number } | { problem: string }> {
  const inside = isAbsolute(given) ? relative(source.root, given) : given;
  const path = normalizeSubjectPath(inside);
  if (path === ".." || path.startsWith("../") || isAbsolute(path))
    return { problem: "outside the workspace: only the workspace's files can be attached" };
  const protection = DEFAULT_PROTECTED_PATHS.protectionOf(path.split("/"));
  if (protection !== undefined) return { problem: `protected (${protection.reason}): not attached` };
  const decision = await source.permissions.decide({
    tool: "read_file",
    effect: "read_only",
    arguments: { path },
  });
  if (decision.decision !== "allow") {
    return { problem: `the policy does not let read_file read it (${decision.reason}): not attached` };
  }
  let stat: Awaited<ReturnType<WorkspaceFs["stat"]>>;
  try {
    stat = await source.fs.stat(path);
  } catch (error) {
    return { problem: messageOf(error) };
  }
  if (stat === undefined) return { problem: "no such file in the workspace" };
  if (stat.kind !== "file") return { problem: "not a file" };
  if (stat.size > ATTACH_MAX_BYTES)
    return { problem: `${stat.size} bytes, over the ${ATTACH_MAX_BYTES}-byte limit for an attachment` };
  let bytes: Uint8Array;
  try {
    bytes = await source.fs.readFile(path);
  } catch (error) {
    return { problem: messageOf(error) };
  }
  if (bytes.length > ATTACH_MAX_BYTES)
    return { problem: `over the ${ATTACH_MAX_BYTES}-byte limit for an attachment` };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { problem: "not UTF-8 text" };
  }
  if (text.includes("\u0000")) return { problem: "a binary file (it holds NUL bytes)" };
  return { path, text, bytes: bytes.length };
}

/**
 * The workspace's files for `@` completion: what a search sees (`.gitignore` honoured, `.git` and
 * `.harness` left out), sorted, at most COMPLETION_FILES.
 */
export async function workspaceFiles(fs: WorkspaceFs): Promise<string[]> {
  const found = await listCandidates(fs, ".", new AbortController().signal);
  return found.files.sort().slice(0, COMPLETION_FILES);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
