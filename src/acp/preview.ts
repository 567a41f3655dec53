import { readFileSync, realpathSync } from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";

/** An edit's or write's whole old and new text, as ACP's `diff` content carries it. */
export interface WholeChange {
  path: string;
  oldText: string | null;
  newText: string;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * What an edit_file or write_file call would make of its file, read now (before the call runs:
 * the engine tells its listener of a reply before any of its calls is authorized). For display
 * only: nothing is written, and a path that leaves the workspace, through a link or otherwise,
 * shows nothing rather than a file outside it.
 */
export function wholeChange(
  root: string,
  tool: string,
  args: Record<string, unknown>,
): WholeChange | undefined {
  if (tool !== "edit_file" && tool !== "write_file") return undefined;
  const path = args.path;
  if (typeof path !== "string" || path === "" || isAbsolute(path)) return undefined;
  const absolute = resolve(root, path);
  if (!inside(root, absolute)) return undefined;
  const before = readInside(root, absolute);
  if (before === "unreadable") return undefined;
  if (tool === "write_file" && typeof args.content === "string")
    return { path: absolute, oldText: before, newText: args.content };
  if (tool === "edit_file" && typeof args.old_text === "string" && typeof args.new_text === "string") {
    if (before === null || !before.includes(args.old_text)) return undefined;
    const oldText = args.old_text;
    const newText = args.new_text;
    const after =
      args.replace_all === true
        ? before.split(oldText).join(newText)
        : before.replace(oldText, () => newText);
    return { path: absolute, oldText: before, newText: after };
  }
  return undefined;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== "" && !rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel);
}

/** The file's text; null when it does not exist; "unreadable" when it is not text or not inside. */
function readInside(root: string, path: string): string | null | "unreadable" {
  let real: string;
  try {
    real = realpathSync(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? null : "unreadable";
  }
  if (!inside(realpathSync(root), real) || real.split(sep).includes(".harness")) return "unreadable";
  try {
    return strictUtf8.decode(readFileSync(join(real)));
  } catch {
    return "unreadable";
  }
}
