import { describe, expect, it } from "vitest";
import { MemoryJournalStore } from "../../src/journal/memory-store.js";
import type { AnyNewEvent } from "../../src/journal/vocabulary.js";
import { applyProposals } from "../../src/proposals/apply.js";
import { type ApplyOutcome, proposalsOf } from "../../src/proposals/ledger.js";
import { ProposalOverlay } from "../../src/proposals/overlay.js";
import { sha256Hex } from "../../src/shared/hash.js";
import type { WorkspaceFs } from "../../src/workspace/fs.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";

const enc = (text: string) => new TextEncoder().encode(text);
const dec = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const ORIGINAL = "export const sum = (a: number, b: number) => a - b;\n";
const FIXED = "export const sum = (a: number, b: number) => a + b;\n";

/** A session whose journal holds proposals made through the overlay, as a propose-mode run would. */
async function session(
  fs: WorkspaceFs,
  writes: { call: string; path: string; content: string; expected: string | null }[],
) {
  const backend = new MemoryJournalStore();
  const overlay = new ProposalOverlay(fs);
  const events: AnyNewEvent[] = [];
  for (const write of writes) {
    const call = overlay.begin(write.call);
    await call.fs.writeFileAtomic(write.path, enc(write.content), { expectedVersion: write.expected });
    for (const record of call.finish())
      events.push({ type: "proposal.recorded", data: { ...record, call_id: write.call } });
  }
  const writer = await backend.openWriter("s", { create: true });
  await writer.append(events);
  await writer.close();
  return backend;
}

/** What `harness apply` does with the journal: fold, apply, record each outcome. */
async function apply(fs: WorkspaceFs, backend: MemoryJournalStore): Promise<ApplyOutcome[]> {
  const writer = await backend.openWriter("s", { create: false });
  try {
    return await applyProposals({
      fs,
      proposals: proposalsOf(await writer.readAll()),
      record: async (outcome) => {
        await writer.append([{ type: "proposal.applied", data: outcome }]);
      },
    });
  } finally {
    await writer.close();
  }
}

async function journaled(backend: MemoryJournalStore) {
  return (await backend.read("s")).flatMap((r) => (r.type === "proposal.applied" ? [r.data] : []));
}

describe("applyProposals", () => {
  it("writes exactly the proposed bytes when the file is still at the base version", async () => {
    const fs = new MemoryWorkspaceFs({ "src/sum.ts": ORIGINAL });
    const backend = await session(fs, [
      { call: "c1", path: "src/sum.ts", content: FIXED, expected: sha256Hex(ORIGINAL) },
    ]);
    expect(dec(await fs.readFile("src/sum.ts"))).toBe(ORIGINAL);
    const outcomes = await apply(fs, backend);
    expect(outcomes).toEqual([
      expect.objectContaining({ path: "src/sum.ts", outcome: "applied", current_version: sha256Hex(FIXED) }),
    ]);
    expect(Buffer.from(await fs.readFile("src/sum.ts")).equals(Buffer.from(FIXED))).toBe(true);
    expect(await journaled(backend)).toEqual(outcomes);
  });

  it("creates a proposed new file only while it is still absent", async () => {
    const fs = new MemoryWorkspaceFs({ "a.txt": "a\n" });
    const backend = await session(fs, [
      { call: "c1", path: "docs/new.md", content: "# new\n", expected: null },
      { call: "c2", path: "docs/raced.md", content: "# mine\n", expected: null },
    ]);
    await fs.writeFileAtomic("docs/raced.md", enc("# theirs\n"));
    const outcomes = await apply(fs, backend);
    expect(outcomes.map((o) => [o.path, o.outcome])).toEqual([
      ["docs/new.md", "applied"],
      ["docs/raced.md", "conflict"],
    ]);
    expect(dec(await fs.readFile("docs/new.md"))).toBe("# new\n");
    expect(dec(await fs.readFile("docs/raced.md"))).toBe("# theirs\n");
    expect(outcomes[1]?.message).toContain("created after the proposal");
  });

  it("reports a file changed since the proposal as a conflict and leaves its bytes alone", async () => {
    const fs = new MemoryWorkspaceFs({ "src/sum.ts": ORIGINAL, "b.txt": "b\n" });
    const backend = await session(fs, [
      { call: "c1", path: "src/sum.ts", content: FIXED, expected: sha256Hex(ORIGINAL) },
      { call: "c2", path: "b.txt", content: "B\n", expected: sha256Hex("b\n") },
    ]);
    const theirs = "// a person's change\nexport const sum = (a: number, b: number) => a - b;\n";
    await fs.writeFileAtomic("src/sum.ts", enc(theirs));
    const outcomes = await apply(fs, backend);
    expect(outcomes.map((o) => [o.path, o.outcome])).toEqual([
      ["b.txt", "applied"],
      ["src/sum.ts", "conflict"],
    ]);
    expect(outcomes[1]?.current_version).toBe(sha256Hex(theirs));
    expect(dec(await fs.readFile("src/sum.ts"))).toBe(theirs);
    expect(dec(await fs.readFile("b.txt"))).toBe("B\n");
    expect((await journaled(backend)).map((o) => o.outcome)).toEqual(["applied", "conflict"]);
  });

  it("detects a change made between its check and its write (compare-and-swap at commit)", async () => {
    const fs = new MemoryWorkspaceFs({ "src/sum.ts": ORIGINAL });
    const backend = await session(fs, [
      { call: "c1", path: "src/sum.ts", content: FIXED, expected: sha256Hex(ORIGINAL) },
    ]);
    // Someone writes the file after apply's check, just before its atomic write commits.
    const racing: WorkspaceFs = {
      label: fs.label,
      protectedPaths: fs.protectedPaths,
      resolve: (p) => fs.resolve(p),
      stat: (p) => fs.stat(p),
      readFile: (p) => fs.readFile(p),
      readChunks: (p, options) => fs.readChunks(p, options),
      readDir: (p) => fs.readDir(p),
      glob: (pattern, options) => fs.glob(pattern, options),
      writeFileAtomic: async (path, data, options) => {
        await fs.writeFileAtomic(path, enc("// raced\n"));
        return fs.writeFileAtomic(path, data, options);
      },
    };
    const [outcome] = await apply(racing, backend);
    expect(outcome).toMatchObject({ outcome: "conflict", current_version: sha256Hex("// raced\n") });
    expect(dec(await fs.readFile("src/sum.ts"))).toBe("// raced\n");
  });

  it("is idempotent: a second apply changes nothing and journals already_applied", async () => {
    const fs = new MemoryWorkspaceFs({ "src/sum.ts": ORIGINAL });
    const backend = await session(fs, [
      { call: "c1", path: "src/sum.ts", content: FIXED, expected: sha256Hex(ORIGINAL) },
    ]);
    const [first] = await apply(fs, backend);
    // A person edits after the first apply: the second must not write the proposal over it.
    await fs.writeFileAtomic("src/sum.ts", enc(`${FIXED}// later\n`));
    const second = await apply(fs, backend);
    expect(second).toEqual([
      expect.objectContaining({ proposal_id: first?.proposal_id, outcome: "already_applied" }),
    ]);
    expect(dec(await fs.readFile("src/sum.ts"))).toBe(`${FIXED}// later\n`);
    expect((await journaled(backend)).map((o) => o.outcome)).toEqual(["applied", "already_applied"]);
  });

  it("counts a file that already holds the proposed content as applied, without writing", async () => {
    const fs = new MemoryWorkspaceFs({ "src/sum.ts": ORIGINAL });
    const backend = await session(fs, [
      { call: "c1", path: "src/sum.ts", content: FIXED, expected: sha256Hex(ORIGINAL) },
    ]);
    // As an apply interrupted after its write and before its journal record leaves it.
    await fs.writeFileAtomic("src/sum.ts", enc(FIXED));
    const [outcome] = await apply(fs, backend);
    expect(outcome).toMatchObject({ outcome: "already_applied", current_version: sha256Hex(FIXED) });
  });

  it("applies only the latest proposal of a file, from the original base", async () => {
    const fs = new MemoryWorkspaceFs({ "src/sum.ts": ORIGINAL });
    const refined = `${FIXED}export const twice = (a: number) => sum(a, a);\n`;
    const backend = await session(fs, [
      { call: "c1", path: "src/sum.ts", content: FIXED, expected: sha256Hex(ORIGINAL) },
      { call: "c2", path: "src/sum.ts", content: refined, expected: sha256Hex(FIXED) },
    ]);
    const outcomes = await apply(fs, backend);
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]?.outcome).toBe("applied");
    expect(dec(await fs.readFile("src/sum.ts"))).toBe(refined);
  });
});

describe("applyProposals: a sub-agent's deletions and artifact-held content", () => {
  const proposal = (over: Record<string, unknown>) => ({
    proposal_id: `p-${String(over.path)}`,
    call_id: "a1",
    path: "x.bin",
    base_version: null,
    content: "",
    content_sha256: sha256Hex("bytes"),
    diff: "",
    ...over,
  });
  async function run(
    fs: WorkspaceFs,
    proposals: Record<string, unknown>[],
    ports: {
      remove?: (path: string, version: string) => Promise<string | undefined>;
      artifact?: (id: string) => Promise<Uint8Array | undefined>;
    },
  ) {
    const backend = new MemoryJournalStore();
    const writer = await backend.openWriter("s", { create: true });
    await writer.append(proposals.map((data) => ({ type: "proposal.recorded", data }) as AnyNewEvent));
    await writer.close();
    const again = await backend.openWriter("s", { create: false });
    try {
      return await applyProposals({
        fs,
        proposals: proposalsOf(await again.readAll()),
        record: async (outcome) => {
          await again.append([{ type: "proposal.applied", data: outcome }]);
        },
        ...ports,
      });
    } finally {
      await again.close();
    }
  }

  it("deletes only through remove, only a file still at its base version", async () => {
    const fs = new MemoryWorkspaceFs({ "a.txt": "a\n", "b.txt": "changed\n", "c.txt": "c\n" });
    const removed: string[] = [];
    const del = (path: string, base: string) =>
      proposal({ path, deleted: true, base_version: sha256Hex(base), content_sha256: sha256Hex(base) });
    const outcomes = await run(
      fs,
      [del("a.txt", "a\n"), del("b.txt", "b\n"), del("c.txt", "c\n"), del("d.txt", "d\n")],
      {
        remove: async (path, version) => {
          // c.txt changes between the check and the commit: remove refuses, as deleteIfStill does.
          if (path === "c.txt") return "c.txt changed while it was being merged; left alone";
          expect(version).toBe(sha256Hex("a\n"));
          removed.push(path);
          return undefined;
        },
      },
    );
    expect(outcomes.map((o) => [o.path, o.outcome])).toEqual([
      ["a.txt", "applied"],
      ["b.txt", "conflict"],
      ["c.txt", "conflict"],
      ["d.txt", "already_applied"],
    ]);
    expect(removed).toEqual(["a.txt"]);
    // Without a way to delete, a deletion is a conflict, never a write of its empty content.
    const fs2 = new MemoryWorkspaceFs({ "a.txt": "a\n" });
    const [alone] = await run(fs2, [del("a.txt", "a\n")], {});
    expect(alone?.outcome).toBe("conflict");
    expect(dec(await fs2.readFile("a.txt"))).toBe("a\n");
  });

  it("writes artifact-held content only when the artifact has the bound digest", async () => {
    const fs = new MemoryWorkspaceFs({});
    const bytes = new Uint8Array([0, 1, 2, 255]);
    const good = proposal({
      path: "good.bin",
      content_sha256: sha256Hex(bytes),
      content_artifact: sha256Hex(bytes),
    });
    const forged = proposal({
      path: "forged.bin",
      content_sha256: sha256Hex(bytes),
      content_artifact: sha256Hex("x"),
    });
    const missing = proposal({ path: "missing.bin", content_artifact: sha256Hex("gone") });
    const store = new Map([
      [sha256Hex(bytes), bytes],
      [sha256Hex("x"), enc("x")],
    ]);
    const outcomes = await run(fs, [good, forged, missing], { artifact: async (id) => store.get(id) });
    expect(outcomes.map((o) => [o.path, o.outcome])).toEqual([
      ["forged.bin", "conflict"],
      ["good.bin", "applied"],
      ["missing.bin", "conflict"],
    ]);
    expect([...(await fs.readFile("good.bin"))]).toEqual([0, 1, 2, 255]);
    expect(await fs.stat("forged.bin")).toBeUndefined();
    expect(await fs.stat("missing.bin")).toBeUndefined();
  });
});
