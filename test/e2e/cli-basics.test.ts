import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  harness,
  PACKAGE_VERSION,
  removeTempDirs,
  sessionIds,
  workspaceWith,
} from "./helpers.js";

const COMMANDS = [
  "run",
  "resume",
  "demo",
  "sessions",
  "inspect",
  "journal",
  "unlock",
  "policy",
  "diff",
  "apply",
  "eval",
  "review",
];

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("harness CLI surface", () => {
  it("--version and -V print the package version", async () => {
    for (const flag of ["--version", "-V"]) {
      const result = await harness([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`harness ${PACKAGE_VERSION}\n`);
    }
  });

  it("top-level --help lists every command and exits 0", async () => {
    const result = await harness(["--help"]);
    expect(result.code).toBe(0);
    for (const command of COMMANDS) expect(result.stdout).toMatch(new RegExp(`^ {2}${command}\\s`, "m"));
  });

  it.each(COMMANDS)("%s --help prints its usage and exits 0", async (command) => {
    const result = await harness([command, "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: harness");
    expect(result.stdout).toContain(command);
    expect(result.stderr).toBe("");
  });

  it("an unknown command exits 64 and names it", async () => {
    const result = await harness(["frobnicate"]);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain('unknown command "frobnicate"');
    expect(result.stdout).toBe("");
  });

  it("an unknown flag exits 64 and names it", async () => {
    const workspace = await workspaceWith({});
    for (const command of ["run", "sessions", "demo"]) {
      const result = await harness([command, "--workspace", workspace, "--no-such-flag", "goal"]);
      expect(result.code, command).toBe(64);
      expect(result.stderr, command).toContain("--no-such-flag");
    }
    expect(sessionIds(workspace)).toEqual([]);
  });

  it("run without a goal exits 64 and creates no session", async () => {
    const workspace = await workspaceWith({ "f.txt": "x\n" });
    const result = await harness(["run", "--workspace", workspace, "--script", "/nonexistent.json"]);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("goal is required");
    expect(sessionIds(workspace)).toEqual([]);
  });
});
