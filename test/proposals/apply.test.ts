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
      proposals: proposalsOf(writer.records),
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
