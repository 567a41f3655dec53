import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { ensureBuilt, expectExit, harness } from "../e2e/helpers.js";

/** Black-box: the built CLI in a real temporary directory, judged by exit codes, output and bytes. */
beforeAll(() => ensureBuilt(), 240_000);

const ORIGINAL = "export const sum = (a: number, b: number) => a - b;\n";
const FIXED = "export const sum = (a: number, b: number) => a + b;\n";

const SCRIPT = `
export default function (messages, step) {
  if (step === 0) return { calls: [{ id: "read", name: "read_file", arguments: { path: "src/sum.ts" } }] };
  if (step === 1) {
    const seen = [...messages].reverse().find((m) => m.role === "tool");
    const version = /^version: ([0-9a-f]{64})$/m.exec(seen.content)[1];
    return {
      calls: [
        { id: "edit", name: "edit_file",
          arguments: { path: "src/sum.ts", old_text: "a - b", new_text: "a + b", expected_version: version } },
        { id: "new", name: "write_file", arguments: { path: "docs/notes.md", content: "# notes\\n" } },
      ],
    };
  }
  return { text: "Proposed a + b and a notes file." };
}
`;

let dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  dirs = [];
});

async function workspace(): Promise<string> {
  const root = await realpath(await mkdtemp(join(tmpdir(), "harness-proposals-")));
  dirs.push(root);
  await mkdir(join(root, "src"));
  await writeFile(join(root, "src/sum.ts"), ORIGINAL);
  await writeFile(join(root, "README.md"), "`sum(a, b)` returns the sum of two numbers.\n");
  await writeFile(join(root, "script.mjs"), SCRIPT);
  return root;
}

/** SHA-256 of every file outside .harness, by relative path. */
async function hashes(root: string, dir = ""): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(join(root, dir), { withFileTypes: true })) {
    const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
    if (path === ".harness") continue;
    if (entry.isDirectory()) Object.assign(out, await hashes(root, path));
    else out[path] = sha256Hex(await readFile(join(root, path)));
  }
  return out;
}

async function journal(root: string, session: string) {
  const text = await readFile(join(root, ".harness/sessions", session, "events.jsonl"), "utf8");
  return text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> });
}

async function proposeRun(root: string, session = "p1") {
  const result = await harness([
    "run",
    "--workspace",
    root,
    "--script",
    join(root, "script.mjs"),
    "--write",
    "propose",
    "--session",
    session,
    "--json",
    "fix sum",
  ]);
  expectExit(result, 4);
  return result;
}

describe("harness run --write propose, diff, apply", () => {
  it("leaves the workspace byte-identical and stops needs_review", async () => {
    const root = await workspace();
    const before = await hashes(root);
    const result = await proposeRun(root);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: "needs_review", session: "p1" });
    expect(await hashes(root)).toEqual(before);
    const events = await journal(root, "p1");
    const proposals = events.filter((e) => e.type === "proposal.recorded").map((e) => e.data);
    expect(proposals.map((p) => [p.path, p.base_version])).toEqual([
      ["src/sum.ts", sha256Hex(ORIGINAL)],
      ["docs/notes.md", null],
    ]);
    expect(events.at(-1)).toMatchObject({ type: "run.stopped", data: { status: "needs_review" } });
    expect(events.some((e) => e.type === "acceptance.checked")).toBe(false);
  });

  it("diff shows the change set, uncoloured when not on a terminal", async () => {
    const root = await workspace();
    await proposeRun(root);
    const result = await harness(["diff", "p1", "--workspace", root]);
    expectExit(result, 0);
    expect(result.stdout).toContain("-export const sum = (a: number, b: number) => a - b;");
    expect(result.stdout).toContain("+export const sum = (a: number, b: number) => a + b;");
    expect(result.stdout).toContain("--- /dev/null\n+++ b/docs/notes.md");
    expect(result.stdout).toContain("pending");
    expect(result.stdout).not.toContain("\u001b[");
  });

  it("apply writes the proposed bytes, then runs --accept, and is verified", async () => {
    const root = await workspace();
    await proposeRun(root);
    // The check passes only if it runs after the change is applied.
    const result = await harness([
      "apply",
      "p1",
      "--workspace",
      root,
      "--accept",
      "grep -q 'a + b' src/sum.ts",
      "--json",
    ]);
    expectExit(result, 0);
    const report = JSON.parse(result.stdout);
    expect(report.status).toBe("verified");
    expect(report.proposals.map((p: { outcome: string }) => p.outcome)).toEqual(["applied", "applied"]);
    expect(await readFile(join(root, "src/sum.ts"), "utf8")).toBe(FIXED);
    expect(await readFile(join(root, "docs/notes.md"), "utf8")).toBe("# notes\n");
    const tail = (await journal(root, "p1")).slice(-4);
    expect(tail.map((e) => e.type)).toEqual([
      "proposal.applied",
      "proposal.applied",
      "acceptance.checked",
      "run.finished",
    ]);
    expect(tail[2]?.data.accepted).toBe(true);
    expect(tail[3]?.data.status).toBe("verified");
  });

  it("applying twice changes nothing the second time and records already_applied", async () => {
    const root = await workspace();
    await proposeRun(root);
    expectExit(await harness(["apply", "p1", "--workspace", root]), 0);
    const afterFirst = await hashes(root);
    const second = await harness(["apply", "p1", "--workspace", root]);
    expectExit(second, 0);
    expect(second.stdout).toContain("already applied");
    expect(await hashes(root)).toEqual(afterFirst);
    const outcomes = (await journal(root, "p1"))
      .filter((e) => e.type === "proposal.applied")
      .map((e) => e.data.outcome);
    expect(outcomes).toEqual(["applied", "applied", "already_applied", "already_applied"]);
  });

  it("reports a file changed since the proposal as a conflict, leaves it alone, and skips acceptance", async () => {
    const root = await workspace();
    await proposeRun(root);
    const theirs = `// reviewed by a person\n${ORIGINAL}`;
    await writeFile(join(root, "src/sum.ts"), theirs);
    const result = await harness(["apply", "p1", "--workspace", root, "--accept", "true", "--json"]);
    expectExit(result, 2);
    const report = JSON.parse(result.stdout);
    expect(report.status).toBe("conflict");
    expect(report.proposals.map((p: { path: string; outcome: string }) => [p.path, p.outcome])).toEqual([
      ["docs/notes.md", "applied"],
      ["src/sum.ts", "conflict"],
    ]);
    expect(await readFile(join(root, "src/sum.ts"), "utf8")).toBe(theirs);
    const events = await journal(root, "p1");
    expect(events.some((e) => e.type === "acceptance.checked" || e.type === "run.finished")).toBe(false);
  });

  it("a failing --accept command exits 2 and the run is not finished", async () => {
    const root = await workspace();
    await proposeRun(root);
    const result = await harness(["apply", "p1", "--workspace", root, "--accept", "exit 3"]);
    expectExit(result, 2);
    expect(await readFile(join(root, "src/sum.ts"), "utf8")).toBe(FIXED);
    const events = await journal(root, "p1");
    expect(events.at(-1)).toMatchObject({ type: "acceptance.checked", data: { accepted: false } });
  });

  it("usage errors exit 64", async () => {
    const root = await workspace();
    expectExit(await harness(["apply", "--workspace", root]), 64);
    expectExit(await harness(["apply", "nope", "--workspace", root]), 64);
    expectExit(await harness(["diff", "nope", "--workspace", root]), 64);
  });
});
