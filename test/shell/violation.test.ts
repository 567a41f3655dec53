import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { NoSandbox } from "../../src/sandbox/none.js";
import { findSandboxViolation } from "../../src/sandbox/violation.js";
import { tempDirectory } from "./helpers.js";

let workspace: string;
let cleanup: () => void;

beforeEach(() => {
  ({ dir: workspace, cleanup } = tempDirectory("violation-ws-"));
  mkdirSync(path.join(workspace, ".harness"));
});

afterEach(() => cleanup());

describe("findSandboxViolation", () => {
  const writable = new BwrapSandbox("workspace-write");

  it("recognises refused writes outside the workspace in common message forms", async () => {
    for (const line of [
      "bash: /etc/passwd: Read-only file system",
      "touch: cannot touch '/usr/local/x': Read-only file system",
      "mkdir: cannot create directory ‘/opt/x’: Read-only file system",
      "PermissionError: [Errno 13] Permission denied: '/root/.bashrc'",
    ]) {
      expect(await findSandboxViolation(`noise\n${line}\n`, writable, workspace), line).toBe(
        "outside the workspace",
      );
    }
  });

  it("names protected workspace paths relative to the workspace", async () => {
    const found = await findSandboxViolation(
      "/usr/bin/bash: line 1: .harness/journal: Read-only file system",
      writable,
      workspace,
    );
    expect(found).toBe(".harness/journal (read-only in the sandbox)");
  });

  it("ignores ordinary failures: writable places, unrelated errors, no sandbox", async () => {
    expect(
      await findSandboxViolation("bash: src/a.ts: Permission denied", writable, workspace),
    ).toBeUndefined();
    expect(
      await findSandboxViolation("cp: /tmp/x: Read-only file system", writable, workspace),
    ).toBeUndefined();
    expect(
      await findSandboxViolation("bash: ./run.sh: Permission denied", writable, workspace),
    ).toBeUndefined();
    expect(await findSandboxViolation("error: test failed", writable, workspace)).toBeUndefined();
    expect(
      await findSandboxViolation("bash: /etc/passwd: Read-only file system", new NoSandbox(), workspace),
    ).toBeUndefined();
  });

  it("treats every workspace write as refused in the read-only profile", async () => {
    const readOnly = new BwrapSandbox("read-only");
    expect(await findSandboxViolation("bash: out.txt: Read-only file system", readOnly, workspace)).toBe(
      "out.txt (read-only in the sandbox)",
    );
  });
});
