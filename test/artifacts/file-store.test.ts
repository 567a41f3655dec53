import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkArtifacts, FileArtifactStore } from "../../src/artifacts/file-store.js";
import { ArtifactCorruptError } from "../../src/artifacts/store.js";
import { ToolError } from "../../src/tools/errors.js";
import { createReadArtifactTool } from "../../src/tools/files/read-artifact.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { Session } from "../tools/helpers.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "harness-artifacts-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("FileArtifactStore", () => {
  it("refuses bytes changed on disk, and read_artifact reports that as ARTIFACT_CORRUPT", async () => {
    const store = new FileArtifactStore(dir);
    const ref = await store.put(Buffer.from("the whole output\n"));
    expect(Buffer.from((await store.read(ref.id)) ?? []).toString()).toBe("the whole output\n");
    await writeFile(join(dir, ref.id), "forged\n");
    await expect(store.read(ref.id)).rejects.toBeInstanceOf(ArtifactCorruptError);
    expect(await checkArtifacts(dir, [ref.id])).toEqual({ intact: 0, modified: [ref.id], missing: [] });

    const session = new Session(new MemoryWorkspaceFs());
    const failure = await createReadArtifactTool()
      .execute({ id: ref.id }, { ...session.context, artifacts: store })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(ToolError);
    expect(failure).toMatchObject({ code: "ARTIFACT_CORRUPT", data: { id: ref.id } });
  });
});
