import { describe, expect, it } from "vitest";
import { ProposalOverlay, proposalIdFor } from "../../src/proposals/overlay.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { WorkspaceError } from "../../src/workspace/fs.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";

const enc = (text: string) => new TextEncoder().encode(text);
const dec = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const ORIGINAL = "export const sum = (a: number, b: number) => a - b;\n";
const FIXED = "export const sum = (a: number, b: number) => a + b;\n";
const V0 = sha256Hex(ORIGINAL);

function repo() {
  return new MemoryWorkspaceFs({ "src/sum.ts": ORIGINAL, "README.md": "# sum\n" });
}

async function rejection(promise: Promise<unknown>): Promise<WorkspaceError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof WorkspaceError) return error;
    throw error;
  }
  throw new Error("expected a WorkspaceError");
}

describe("ProposalOverlay", () => {
  it("captures a write as a proposal and never touches the workspace", async () => {
    const base = repo();
    const before = base.snapshot();
    const overlay = new ProposalOverlay(base);
    const call = overlay.begin("call-1");
    await call.fs.writeFileAtomic("src/sum.ts", enc(FIXED), { expectedVersion: V0 });
    // The writing call sees its own change.
    expect(dec(await call.fs.readFile("src/sum.ts"))).toBe(FIXED);
    const [record, ...more] = call.finish();
    expect(more).toEqual([]);
    expect(record).toEqual({
      proposal_id: proposalIdFor("call-1", "src/sum.ts"),
      path: "src/sum.ts",
      base_version: V0,
      content: FIXED,
      content_sha256: sha256Hex(FIXED),
      diff: expect.stringContaining("+export const sum = (a: number, b: number) => a + b;"),
    });
    expect(record?.proposal_id).toMatch(/^p-[0-9a-f]{16}$/);
    expect(base.snapshot()).toEqual(before);
    expect(dec(await base.readFile("src/sum.ts"))).toBe(ORIGINAL);
  });

  it("lets later calls read the preview, and stat reports its size", async () => {
    const overlay = new ProposalOverlay(repo());
    const first = overlay.begin("c1");
    await first.fs.writeFileAtomic("src/sum.ts", enc(`${FIXED}// more\n`), { expectedVersion: V0 });
    const other = overlay.begin("c2");
    // Not finished yet: other calls do not see it.
    expect(dec(await other.fs.readFile("src/sum.ts"))).toBe(ORIGINAL);
    first.finish();
    const later = overlay.begin("c3");
    expect(dec(await later.fs.readFile("src/sum.ts"))).toBe(`${FIXED}// more\n`);
    expect(await later.fs.stat("src/sum.ts")).toMatchObject({
      kind: "file",
      size: enc(`${FIXED}// more\n`).length,
    });
    expect(overlay.proposals.map((p) => p.path)).toEqual(["src/sum.ts"]);
  });

  it("refuses a change with a stale expected version and records nothing", async () => {
    const overlay = new ProposalOverlay(repo());
    const call = overlay.begin("c1");
    const error = await rejection(
      call.fs.writeFileAtomic("src/sum.ts", enc(FIXED), { expectedVersion: sha256Hex("something else") }),
    );
    expect(error.code).toBe("STALE_VERSION");
    expect(call.finish()).toEqual([]);
    expect(overlay.proposals).toEqual([]);
  });

  it("proposes a new file (base null) that readDir, glob and stat show", async () => {
    const base = repo();
    const overlay = new ProposalOverlay(base);
    const call = overlay.begin("c1");
    await call.fs.writeFileAtomic("src/util/math.ts", enc("export const one = 1;\n"), {
      expectedVersion: null,
    });
    const [record] = call.finish();
    expect(record?.base_version).toBeNull();
    expect(record?.diff.startsWith("--- /dev/null\n+++ b/src/util/math.ts\n@@ -0,0 +1 @@\n")).toBe(true);
    const view = overlay.begin("c2").fs;
    expect(await view.readDir("src")).toEqual([
      { name: "sum.ts", kind: "file" },
      { name: "util", kind: "directory" },
    ]);
    expect(await view.readDir("src/util")).toEqual([{ name: "math.ts", kind: "file" }]);
    expect(await view.glob("**/*.ts")).toEqual(["src/sum.ts", "src/util/math.ts"]);
    expect(await view.glob("*.ts", { cwd: "src/util" })).toEqual(["src/util/math.ts"]);
    expect(await view.stat("src/util")).toMatchObject({ kind: "directory" });
    expect(await base.stat("src/util/math.ts")).toBeUndefined();
    // Creating it again: it exists in the preview now.
    const again = await rejection(
      view.writeFileAtomic("src/util/math.ts", enc("x"), { expectedVersion: null }),
    );
    expect(again.code).toBe("STALE_VERSION");
    // A file cannot be proposed below a proposed file, nor over a proposed directory.
    expect((await rejection(view.writeFileAtomic("src/util/math.ts/x", enc("x")))).code).toBe(
      "NOT_A_DIRECTORY",
    );
    expect((await rejection(view.writeFileAtomic("src/util", enc("x")))).code).toBe("IS_DIRECTORY");
  });

  describe("a second proposal for the same file", () => {
    async function withFirst() {
      const base = repo();
      const overlay = new ProposalOverlay(base);
      const first = overlay.begin("c1");
      await first.fs.writeFileAtomic("src/sum.ts", enc(FIXED), { expectedVersion: V0 });
      const [record] = first.finish();
      return { base, overlay, first: record! };
    }

    it("supersedes the first when based on the preview, keeping the original base", async () => {
      const { overlay, first } = await withFirst();
      const refined = `${FIXED}export const twice = (a: number) => sum(a, a);\n`;
      const call = overlay.begin("c2");
      await call.fs.writeFileAtomic("src/sum.ts", enc(refined), { expectedVersion: sha256Hex(FIXED) });
      const [second] = call.finish();
      expect(second?.proposal_id).not.toBe(first.proposal_id);
      expect(second?.base_version).toBe(V0);
      // The diff is against the file on disk, not against the first preview.
      expect(second?.diff).toContain("-export const sum = (a: number, b: number) => a - b;");
      expect(second?.diff).toContain("+export const twice");
      expect(overlay.proposals).toEqual([second]);
    });

    it("is a conflict when based on the original file", async () => {
      const { overlay, first } = await withFirst();
      const call = overlay.begin("c2");
      const error = await rejection(
        call.fs.writeFileAtomic("src/sum.ts", enc("x\n"), { expectedVersion: V0 }),
      );
      expect(error.code).toBe("STALE_VERSION");
      expect(error.message).toContain(first.proposal_id);
      expect(error.message).toContain("based on the original file");
      expect(call.finish()).toEqual([]);
      expect(overlay.proposals).toEqual([first]);
    });

    it("is a conflict when not based on any version", async () => {
      const { overlay, first } = await withFirst();
      const call = overlay.begin("c2");
      const error = await rejection(call.fs.writeFileAtomic("src/sum.ts", enc("x\n")));
      expect(error.code).toBe("STALE_VERSION");
      expect(error.message).toContain("pending proposal");
      expect(overlay.proposals).toEqual([first]);
    });

    it("is refused when the real file changed since the first proposal", async () => {
      const { base, overlay } = await withFirst();
      await base.writeFileAtomic("src/sum.ts", enc("// edited by a person\n"));
      const call = overlay.begin("c2");
      const error = await rejection(
        call.fs.writeFileAtomic("src/sum.ts", enc("y\n"), { expectedVersion: sha256Hex(FIXED) }),
      );
      expect(error.code).toBe("STALE_VERSION");
      expect(error.message).toContain("changed in the workspace");
    });
  });

  it("starts from a resumed session's proposals", async () => {
    const base = repo();
    const first = new ProposalOverlay(base);
    const call = first.begin("c1");
    await call.fs.writeFileAtomic("src/sum.ts", enc(FIXED), { expectedVersion: V0 });
    const records = call.finish();
    const resumed = new ProposalOverlay(base, records);
    expect(dec(await resumed.begin("c2").fs.readFile("src/sum.ts"))).toBe(FIXED);
    expect(resumed.proposals).toEqual(records);
  });

  it("refuses writes after the call finished, so nothing goes unrecorded", async () => {
    const overlay = new ProposalOverlay(repo());
    const call = overlay.begin("c1");
    call.finish();
    const error = await rejection(
      call.fs.writeFileAtomic("late.txt", enc("late"), { expectedVersion: null }),
    );
    expect(error.code).toBe("IO_ERROR");
    expect(overlay.proposals).toEqual([]);
  });

  it("keeps the workspace boundary: escaping and reserved paths are refused", async () => {
    const view = new ProposalOverlay(repo()).begin("c1").fs;
    expect((await rejection(view.writeFileAtomic("../x", enc("x")))).code).toBe("PATH_ESCAPE");
    expect((await rejection(view.writeFileAtomic(".harness/x", enc("x")))).code).toBe("RESERVED_PATH");
  });
});

describe("ProposalOverlay and a sub-agent's proposals", () => {
  it("leaves a deletion or artifact-held proposal out of the preview: the file reads as it is", async () => {
    const fs = new MemoryWorkspaceFs({ "a.txt": "a\n", "b.bin": "b\n" });
    const common = { call_id: "a1", diff: "", content: "" };
    const overlay = new ProposalOverlay(fs, [
      {
        ...common,
        proposal_id: "p1",
        path: "a.txt",
        base_version: sha256Hex("a\n"),
        content_sha256: sha256Hex("a\n"),
        deleted: true,
      },
      {
        ...common,
        proposal_id: "p2",
        path: "b.bin",
        base_version: sha256Hex("b\n"),
        content_sha256: sha256Hex("x"),
        content_artifact: sha256Hex("x"),
      },
    ]);
    expect(overlay.proposals).toEqual([]);
    const view = overlay.begin("c1").fs;
    expect(dec(await view.readFile("a.txt"))).toBe("a\n");
    expect(dec(await view.readFile("b.bin"))).toBe("b\n");
  });
});
