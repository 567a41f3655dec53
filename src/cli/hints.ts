import { statSync } from "node:fs";

/**
 * Next-step commands harness prints ("continue with: harness resume ID ..."). Each must work as
 * printed from the directory the user is in: it names the workspace unless that is the current
 * directory, quoted for a POSIX shell.
 */
export function hint(command: string, workspace: { root: string }, cwd = process.cwd()): string {
  return `harness ${command}${workspaceFlag(workspace, cwd)}`;
}

/** ` --workspace DIR` when the workspace is not the current directory, so a printed command works as printed. */
export function workspaceFlag(workspace: { root: string }, cwd = process.cwd()): string {
  return sameDir(workspace.root, cwd) ? "" : ` --workspace ${shellQuote(workspace.root)}`;
}

function sameDir(root: string, cwd: string): boolean {
  try {
    const a = statSync(root);
    const b = statSync(cwd);
    return a.dev === b.dev && a.ino === b.ino;
  } catch {
    return root === cwd;
  }
}

/** A word the user can paste into a POSIX shell: quoted only when it needs to be. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
