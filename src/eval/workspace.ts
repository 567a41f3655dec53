import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileJournalStore } from "../journal/file-store.js";
import { DiskWorkspaceFs } from "../workspace/disk-fs.js";
import type { TaskWorkspace } from "./suite.js";

/** A new temp directory with an empty `.harness/sessions` journal area. */
export async function createTaskWorkspace(
  label: string,
): Promise<TaskWorkspace & { remove(): Promise<void> }> {
  const safe = label.replace(/[^a-z0-9_-]/gi, "_").slice(0, 40);
  const root = await realpath(await mkdtemp(join(tmpdir(), `harness-eval-${safe}-`)));
  const harnessDir = join(root, ".harness");
  await mkdir(join(harnessDir, "sessions"), { recursive: true });
  return {
    root,
    fs: await DiskWorkspaceFs.create(root),
    store: new FileJournalStore(harnessDir),
    artifactsDir: (session) => join(harnessDir, "sessions", session, "artifacts"),
    remove: () => rm(root, { recursive: true, force: true }),
  };
}
