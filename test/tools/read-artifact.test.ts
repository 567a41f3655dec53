import { describe, expect, it } from "vitest";
import { createReadArtifactTool, snapRange } from "../../src/tools/files/read-artifact.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { Session } from "./helpers.js";

const readArtifact = createReadArtifactTool();

describe("read_artifact", () => {
  it("reads a stored artifact whole when it fits", async () => {
    const session = new Session(new MemoryWorkspaceFs());
    const ref = await session.artifacts.put(Buffer.from("line one\nline two\n"));
    const out = await session.run(readArtifact, { id: ref.id });
    expect(out.content).toBe(`artifact: ${ref.id}\nbytes 0-18 of 18 (end)\n\nline one\nline two\n`);
    expect(out.data).toEqual({ id: ref.id, offset: 0, length: 18, total_bytes: 18 });
  });

  it("pages by bytes without splitting UTF-8 characters, and the pages rebuild the text", async () => {
    const session = new Session(new MemoryWorkspaceFs());
    const original = "€uro 你好 😀 end".repeat(20);
    const ref = await session.artifacts.put(Buffer.from(original));
    const pieces: string[] = [];
    let offset: number | undefined = 0;
    while (offset !== undefined) {
      const out = await session.run(readArtifact, { id: ref.id, offset, length: 7 });
      expect(out.content).not.toContain("\uFFFD");
      expect(out.data?.length as number).toBeLessThanOrEqual(7);
      pieces.push(out.content.slice(out.content.indexOf("\n\n") + 2));
      offset = out.data?.next_offset as number | undefined;
    }
    expect(pieces.join("")).toBe(original);
  });

  it("moves an offset inside a character back to the character's start", async () => {
    const bytes = Buffer.from("a€b"); // 61 e2 82 ac 62
    expect(snapRange(bytes, 2, 3)).toEqual({ start: 1, end: 4 });
    expect(snapRange(bytes, 1, 1)).toEqual({ start: 1, end: 4 });
    expect(snapRange(bytes, 0, 2)).toEqual({ start: 0, end: 1 });
    expect(snapRange(bytes, 5, 10)).toEqual({ start: 5, end: 5 });
  });

  it("defaults to 16 KiB and caps at 64 KiB", async () => {
    const session = new Session(new MemoryWorkspaceFs());
    const ref = await session.artifacts.put(Buffer.alloc(100 * 1024, 0x61));
    expect((await session.run(readArtifact, { id: ref.id })).data).toMatchObject({
      length: 16 * 1024,
      next_offset: 16 * 1024,
    });
    expect((await session.run(readArtifact, { id: ref.id, length: 64 * 1024 })).data).toMatchObject({
      length: 64 * 1024,
    });
    expect(readArtifact.input.safeParse({ id: ref.id, length: 64 * 1024 + 1 }).success).toBe(false);
  });

  it("marks bytes that are not UTF-8 instead of failing", async () => {
    const session = new Session(new MemoryWorkspaceFs());
    const ref = await session.artifacts.put(new Uint8Array([0x61, 0xff, 0x62]));
    const out = await session.run(readArtifact, { id: ref.id });
    expect(out.content).toContain("not valid UTF-8");
    expect(out.data).toMatchObject({ lossy: true, total_bytes: 3 });
  });

  it("fails for unknown ids and offsets past the end", async () => {
    const session = new Session(new MemoryWorkspaceFs());
    await session.fail(readArtifact, { id: "0".repeat(64) }, "ARTIFACT_NOT_FOUND");
    const ref = await session.artifacts.put(Buffer.from("abc"));
    await session.fail(readArtifact, { id: ref.id, offset: 4 }, "SEMANTIC_VALIDATION_ERROR");
    expect((await session.run(readArtifact, { id: ref.id, offset: 3 })).data).toMatchObject({ length: 0 });
  });
});
