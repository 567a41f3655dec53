import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { excludeStateDirFromGit } from "../../src/workspace/git-exclude.js";
import { git } from "../support/git.js";

/**
 * `.harness/` is kept out of `git status` by one line in the repository's own `info/exclude`:
 * never the user's `.gitignore`, once however often harness opens the workspace, in the common dir
 * of a worktree, and never through a `.git` that leads somewhere that is not a repository.
 */

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), "harness-exclude-")));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function repository(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "-q", ".");
  writeFileSync(path.join(dir, "a.txt"), "a\n");
  writeFileSync(path.join(dir, ".gitignore"), "*.log\n");
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "start");
  return dir;
}

const entries = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line === ".harness/");

describe("excludeStateDirFromGit", () => {
  it("adds one line to .git/info/exclude, once, and git status no longer shows .harness", () => {
    const repo = repository(path.join(root, "repo"));
    mkdirSync(path.join(repo, ".harness/sessions"), { recursive: true });
    writeFileSync(path.join(repo, ".harness/sessions/x"), "journal");
    expect(git(repo, "status", "--porcelain")).toBe("?? .harness/\n");
    const before = readFileSync(path.join(repo, ".git/info/exclude"), "utf8");
    expect(excludeStateDirFromGit(repo)).toBe("added");
    for (let i = 0; i < 5; i++) expect(excludeStateDirFromGit(repo)).toBe("present");
    const after = readFileSync(path.join(repo, ".git/info/exclude"), "utf8");
    expect(after.startsWith(before)).toBe(true);
    expect(entries(path.join(repo, ".git/info/exclude"))).toEqual([".harness/"]);
    expect(git(repo, "status", "--porcelain")).toBe("");
    expect(readFileSync(path.join(repo, ".gitignore"), "utf8")).toBe("*.log\n");
  });

  it("makes info/exclude when the repository has none, and ends a last line without a newline first", () => {
    const repo = repository(path.join(root, "repo"));
    rmSync(path.join(repo, ".git/info"), { recursive: true, force: true });
    expect(excludeStateDirFromGit(repo)).toBe("added");
    expect(readFileSync(path.join(repo, ".git/info/exclude"), "utf8")).toContain(".harness/\n");
    writeFileSync(path.join(repo, ".git/info/exclude"), "*.tmp");
    expect(excludeStateDirFromGit(repo)).toBe("added");
    expect(readFileSync(path.join(repo, ".git/info/exclude"), "utf8").split("\n").slice(0, 1)).toEqual([
      "*.tmp",
    ]);
  });

  it("covers a workspace in a subdirectory of the repository, and a worktree through its common dir", () => {
    const repo = repository(path.join(root, "repo"));
    const sub = path.join(repo, "packages/app");
    mkdirSync(path.join(sub, ".harness"), { recursive: true });
    writeFileSync(path.join(sub, ".harness/x"), "x");
    expect(excludeStateDirFromGit(sub)).toBe("added");
    expect(git(repo, "status", "--porcelain")).toBe("");

    const worktree = path.join(root, "worktree");
    git(repo, "worktree", "add", "-q", worktree);
    mkdirSync(path.join(worktree, ".harness"));
    writeFileSync(path.join(worktree, ".harness/x"), "x");
    expect(excludeStateDirFromGit(worktree)).toBe("present");
    expect(git(worktree, "status", "--porcelain")).toBe("");
    expect(entries(path.join(repo, ".git/info/exclude"))).toEqual([".harness/"]);
  });

  it("writes nothing where a .git file or link leads somewhere that is not a repository", () => {
    const victim = path.join(root, "victim");
    mkdirSync(path.join(victim, "info"), { recursive: true });
    const workspace = path.join(root, "ws");
    mkdirSync(workspace);
    writeFileSync(path.join(workspace, ".git"), `gitdir: ${victim}\n`);
    expect(excludeStateDirFromGit(workspace)).toBe("skipped");
    rmSync(path.join(workspace, ".git"));
    symlinkSync(victim, path.join(workspace, ".git"));
    expect(excludeStateDirFromGit(workspace)).toBe("skipped");
    expect(() => readFileSync(path.join(victim, "info/exclude"))).toThrow();

    // A real repository whose info/exclude is a link: not followed.
    const repo = repository(path.join(root, "repo"));
    const target = path.join(root, "target.txt");
    writeFileSync(target, "mine\n");
    rmSync(path.join(repo, ".git/info/exclude"));
    symlinkSync(target, path.join(repo, ".git/info/exclude"));
    expect(excludeStateDirFromGit(repo)).toBe("skipped");
    expect(readFileSync(target, "utf8")).toBe("mine\n");
  });

  it("says so when there is no repository at all", () => {
    const plain = path.join(root, "plain");
    mkdirSync(plain);
    // tmpdir() is not inside a repository on the machines the tests run on.
    expect(excludeStateDirFromGit(plain)).toBe("no_repository");
  });
});
