import { chmod, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { DiskWorkspaceFs } from "../../src/workspace/disk-fs.js";
import type { WorkspaceFs } from "../../src/workspace/fs.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";

/** A workspace under test plus ways to look at its bytes without going through WorkspaceFs. */
export interface FsFixture {
  readonly kind: "disk" | "memory";
  readonly fs: WorkspaceFs;
  /** Every regular file (POSIX relative path → bytes), `.harness` included, read directly. */
  files(): Promise<Record<string, Uint8Array>>;
  setMode(relative: string, mode: number): Promise<void>;
  dispose(): Promise<void>;
}

export type FsFactory = (files?: Record<string, string | Uint8Array>) => Promise<FsFixture>;

export const memoryFactory: FsFactory = async (files = {}) => {
  const fs = new MemoryWorkspaceFs(files);
  return {
    kind: "memory",
    fs,
    files: async () => fs.snapshot(),
    setMode: async (relative, mode) => fs.setMode(relative, mode),
    dispose: async () => undefined,
  };
};

export interface DiskFixture extends FsFixture {
  readonly fs: DiskWorkspaceFs;
  /** The real temp directory holding `ws/` (the workspace) and `outside/`. */
  readonly base: string;
  readonly root: string;
  readonly outside: string;
}

export async function createDiskFixture(
  files: Record<string, string | Uint8Array> = {},
): Promise<DiskFixture> {
  const base = await realpath(await mkdtemp(path.join(tmpdir(), "harness-ws-")));
  const root = path.join(base, "ws");
  const outside = path.join(base, "outside");
  await mkdir(root);
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "outside secret\n");
  for (const [relative, content] of Object.entries(files)) {
    const target = path.join(root, ...relative.split("/"));
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content);
  }
  const fs = await DiskWorkspaceFs.create(root);
  return {
    kind: "disk",
    fs,
    base,
    root,
    outside,
    files: () => collectFiles(root),
    setMode: (relative, mode) => chmod(path.join(root, ...relative.split("/")), mode),
    dispose: () => rm(base, { recursive: true, force: true }),
  };
}

export const diskFactory: FsFactory = (files) => createDiskFixture(files);

export const FACTORIES: ReadonlyArray<readonly [string, FsFactory]> = [
  ["DiskWorkspaceFs", diskFactory],
  ["MemoryWorkspaceFs", memoryFactory],
];

/** Regular files below `dir` (symlinks are not followed), by POSIX relative path. */
export async function collectFiles(dir: string, prefix = ""): Promise<Record<string, Uint8Array>> {
  const result: Record<string, Uint8Array> = {};
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const relative = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) Object.assign(result, await collectFiles(full, relative));
    else if (entry.isFile()) result[relative] = new Uint8Array(await readFile(full));
  }
  return result;
}

export function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

export function text(bytes: Uint8Array | undefined): string | undefined {
  return bytes === undefined ? undefined : Buffer.from(bytes).toString("utf8");
}
