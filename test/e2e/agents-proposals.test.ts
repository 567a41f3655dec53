import { existsSync, lstatSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  sessionDir,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A `merge: propose` child's deletions, binary files and large files become the parent's
 * proposals through the built CLI: `harness diff` shows them, `harness apply` deletes
 * compare-and-swap (only a file still at its base version) and writes content kept as an
 * artifact (never inline in the journal). A link is not proposed, and the result says why.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const BIG = 1_100_000;

async function delegate(workspace: string, command: string): Promise<{ id: string }> {
  const file = join(await tempDir("harness-agents-proposals-"), "script.json");
  await writeFile(
    file,
    JSON.stringify({
      replies: [
        { text: "", calls: [{ id: "a1", name: "agent", arguments: { task: "change files", label: "w" } }] },
        { text: "ok" },
      ],
      agents: {
        w: {
          replies: [
            { text: "", calls: [{ id: "c1", name: "shell", arguments: { command } }] },
            { text: "changed" },
          ],
        },
      },
    }),
  );
  const id = `s${Math.random().toString(16).slice(2, 10)}`;
  const result = await finished(
    startHarness(
      [
        "run",
        "--script",
        file,
        "--workspace",
        workspace,
        "--session",
        id,
        "--json",
        "--write",
        "allow",
        "--shell",
        "allow",
        "delegate",
      ],
      { env: { ...childEnv(), HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") } },
    ),
  );
  expectExit(result, 0);
  return { id };
}

describe("a child's deletions, binary and large files as the parent's proposals", () => {
  it("are proposed (binary and large content as artifacts), shown by diff, and applied compare-and-swap", async () => {
    const workspace = await workspaceWith({
      "gone.txt": "delete me\n",
      "kept.txt": "delete me too\n",
      "notes.txt": "one\n",
    });
    const { id } = await delegate(
      workspace,
      "rm gone.txt kept.txt && printf 'A\\000B\\377' > bin.dat && " +
        `head -c ${BIG} /dev/zero | tr '\\000' 'a' > big.txt && ln -s notes.txt link.txt`,
    );
    // Nothing changed here yet: the child worked in its copy.
    expect(await readFile(join(workspace, "gone.txt"), "utf8")).toBe("delete me\n");
    expect(existsSync(join(workspace, "bin.dat"))).toBe(false);

    const journal = await readJournal(workspace, id);
    const proposals = ofType(journal, "proposal.recorded").map((r) => r.data);
    const byPath = new Map(proposals.map((p) => [String(p.path), p]));
    expect([...byPath.keys()].sort()).toEqual(["big.txt", "bin.dat", "gone.txt", "kept.txt"]);
    expect(byPath.get("gone.txt")).toMatchObject({
      deleted: true,
      content: "",
      base_version: sha256Hex(Buffer.from("delete me\n")),
    });
    const binBytes = Buffer.from([0x41, 0x00, 0x42, 0xff]);
    const bigBytes = Buffer.alloc(BIG, "a");
    for (const [path, bytes] of [
      ["bin.dat", binBytes],
      ["big.txt", bigBytes],
    ] as const) {
      const proposal = byPath.get(path)!;
      // Content kept as an artifact of the parent session, not inline in its journal.
      expect(proposal).toMatchObject({ content: "", content_sha256: sha256Hex(bytes), base_version: null });
      const artifact = join(sessionDir(workspace, id), "artifacts", String(proposal.content_artifact));
      expect(sha256Hex(await readFile(artifact))).toBe(sha256Hex(bytes));
    }
    expect(Math.max(...journal.map((r) => JSON.stringify(r).length))).toBeLessThan(200_000);
    // The link is not proposed: the result says so.
    const result = String(resultsByCall(journal).get("a1")?.content);
    expect(result).toContain("not proposed: link.txt: a symbolic link is never proposed");
    expect(result).toContain("proposed: 4 file(s)");

    // harness diff shows the deletion and the artifact-held files.
    const diff = await harness(["diff", id, "--workspace", workspace, "--json"]);
    expectExit(diff, 0);
    const shown = JSON.parse(diff.stdout).proposals as Record<string, unknown>[];
    expect(shown.find((p) => p.path === "gone.txt")).toMatchObject({ deleted: true, state: "pending" });
    expect(shown.find((p) => p.path === "gone.txt")?.diff).toContain("-delete me");
    expect(shown.find((p) => p.path === "bin.dat")).toMatchObject({ state: "pending" });
    expect(shown.find((p) => p.path === "bin.dat")?.content_artifact).toBe(
      byPath.get("bin.dat")?.content_artifact,
    );
    const text = await harness(["diff", id, "--workspace", workspace]);
    expect(text.stdout).toMatch(/gone\.txt .*delete/);

    // The parent changes kept.txt meanwhile: its deletion is a conflict, the file left alone.
    await writeFile(join(workspace, "kept.txt"), "changed here\n");
    const applied = await harness(["apply", id, "--workspace", workspace, "--json"]);
    // A conflict: exit 2 (stopped), the rest applied.
    expectExit(applied, 2);
    expect(JSON.parse(applied.stdout).status).toBe("conflict");
    const outcomes = new Map(
      (JSON.parse(applied.stdout).proposals as { path: string; outcome: string }[]).map((o) => [
        o.path,
        o.outcome,
      ]),
    );
    expect(Object.fromEntries(outcomes)).toEqual({
      "big.txt": "applied",
      "bin.dat": "applied",
      "gone.txt": "applied",
      "kept.txt": "conflict",
    });
    expect(existsSync(join(workspace, "gone.txt"))).toBe(false);
    expect(await readFile(join(workspace, "kept.txt"), "utf8")).toBe("changed here\n");
    expect(Buffer.compare(await readFile(join(workspace, "bin.dat")), binBytes)).toBe(0);
    expect(Buffer.compare(await readFile(join(workspace, "big.txt")), bigBytes)).toBe(0);
    expect(lstatSync(join(workspace, "notes.txt")).isFile()).toBe(true);
    expect(existsSync(join(workspace, "link.txt"))).toBe(false);
    // Journaled in the parent: one outcome per file.
    const recorded = ofType(await readJournal(workspace, id), "proposal.applied").map((r) => [
      r.data.path,
      r.data.outcome,
    ]);
    expect(recorded.sort()).toEqual([
      ["big.txt", "applied"],
      ["bin.dat", "applied"],
      ["gone.txt", "applied"],
      ["kept.txt", "conflict"],
    ]);

    // Again: nothing is deleted or written twice.
    const again = await harness(["apply", id, "--workspace", workspace, "--json"]);
    const second = (JSON.parse(again.stdout).proposals as { path: string; outcome: string }[]).map((o) => [
      o.path,
      o.outcome,
    ]);
    expect(second).toEqual([
      ["big.txt", "already_applied"],
      ["bin.dat", "already_applied"],
      ["gone.txt", "already_applied"],
      ["kept.txt", "conflict"],
    ]);
  }, 120_000);
});
