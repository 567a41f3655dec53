// A repository that ships its own `.harness` with symbolic links in it must not steer where harness
// writes its journals, locks and (model-controlled) artifacts: every attack runs the built CLI and
// checks that nothing appeared where the link points.
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** Run with a private HOME (its own journal key) and an empty user config. */
async function run(workspace: string, args: readonly string[]) {
  const home = await tempDir("harness-home-");
  const config = join(home, "config.json");
  writeFileSync(config, "{}");
  const script = await jsonScript([
    {
      text: "write",
      calls: [
        { id: "w", name: "write_file", arguments: { path: "out.txt", content: "* * * * * root id\n" } },
      ],
    },
    { text: "done" },
  ]);
  return finished(
    startHarness(["run", "--script", script, "-w", workspace, "--write", "allow", ...args, "go"], {
      env: { ...childEnv(), HOME: home, HARNESS_CONFIG: config },
    }),
  );
}

describe("a shipped .harness holding symbolic links is refused before anything is written", () => {
  it(".harness itself a symlink to a directory outside the workspace: exit 5, nothing created there", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const outside = await tempDir("harness-outside-");
    symlinkSync(outside, join(workspace, ".harness"));
    const result = await run(workspace, ["--session", "s1"]);
    expectExit(result, 5);
    expect(result.stderr).toContain('".harness" is a symbolic link');
    expect(readdirSync(outside)).toEqual([]);
    expect(readdirSync(workspace).sort()).toEqual([".harness", "a.txt"]);
  });

  it("sessions, a session's artifacts directory and its events.jsonl as symlinks: exit 5, the targets untouched", async () => {
    for (const [link, targetIsDir] of [
      ["sessions", true],
      ["sessions/s2/artifacts", true],
      ["sessions/s2/events.jsonl", false],
      ["locks", true],
    ] as const) {
      const workspace = await workspaceWith({ "a.txt": "a\n" });
      const outside = await tempDir("harness-outside-");
      const target = targetIsDir ? outside : join(outside, "victim");
      if (!targetIsDir) writeFileSync(target, "keep me\n");
      const at = join(workspace, ".harness", link);
      mkdirSync(join(at, ".."), { recursive: true });
      symlinkSync(target, at);
      const result = await run(workspace, ["--session", "s2"]);
      expectExit(result, 5);
      expect(result.stderr).toContain(`".harness/${link}" is a symbolic link`);
      expect(readdirSync(outside)).toEqual(targetIsDir ? [] : ["victim"]);
      // Nothing ran: the model's write did not happen either.
      expect(readdirSync(workspace).sort()).toEqual([".harness", "a.txt"]);
    }
  });

  it("a FIFO in place of events.jsonl is refused instead of hanging the reader", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    mkdirSync(join(workspace, ".harness/sessions/s3"), { recursive: true });
    const { execFileSync } = await import("node:child_process");
    execFileSync("mkfifo", [join(workspace, ".harness/sessions/s3/events.jsonl")]);
    const home = await tempDir("harness-home-");
    const result = await finished(
      startHarness(["sessions", "-w", workspace], {
        env: { ...childEnv(), HOME: home, HARNESS_CONFIG: join(home, "none.json") },
      }),
    );
    expect(result.stderr).toContain('".harness/sessions/s3/events.jsonl" is not a regular file or directory');
    expect(result.code).toBe(5);
  });

  it("objects/ itself a symlink: exit 5, nothing kept through it", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const outside = await tempDir("harness-outside-");
    mkdirSync(join(workspace, ".harness"));
    symlinkSync(outside, join(workspace, ".harness/objects"));
    const result = await run(workspace, ["--session", "s4"]);
    expectExit(result, 5);
    expect(result.stderr).toContain('".harness/objects" is a symbolic link');
    expect(readdirSync(outside)).toEqual([]);
  });

  it("links and a FIFO planted inside objects/ under the names of real contents: never followed or waited on, replaced by real copies", async () => {
    // objects/ is not listed at a workspace's opening (it grows with every content ever kept):
    // what is planted in it must be harmless to every reader and writer of the store.
    const workspace = await workspaceWith({ "a.txt": "hello\n", "b.txt": "world\n" });
    const outside = await tempDir("harness-outside-");
    const victim = join(outside, "victim");
    writeFileSync(victim, "keep me\n");
    const sha = (text: string) => createHash("sha256").update(text).digest("hex");
    const objects = join(workspace, ".harness/objects");
    mkdirSync(objects, { recursive: true });
    symlinkSync(victim, join(objects, sha("hello\n")));
    const { execFileSync } = await import("node:child_process");
    execFileSync("mkfifo", [join(objects, sha("world\n"))]);
    const result = await run(workspace, ["--session", "s5"]);
    expectExit(result, 0);
    expect(readFileSync(victim, "utf8")).toBe("keep me\n");
    // The record kept real copies in their place, each holding the bytes its name says.
    for (const text of ["hello\n", "world\n"]) {
      const kept = join(objects, sha(text));
      expect(lstatSync(kept).isFile()).toBe(true);
      expect(readFileSync(kept, "utf8")).toBe(text);
    }
  });

  it("a workspace whose .harness is harness's own still runs (the check refuses only links)", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const first = await run(workspace, ["--session", "ok"]);
    expectExit(first, 0);
    expect(readdirSync(workspace).sort()).toEqual([".harness", "a.txt", "out.txt"]);
  });
});
