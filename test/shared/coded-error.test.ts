import { describe, expect, it } from "vitest";
import { EngineError } from "../../src/engine/errors.js";
import { JournalError } from "../../src/journal/store.js";
import { SandboxUnavailableError } from "../../src/sandbox/sandbox.js";
import { CodedError } from "../../src/shared/coded-error.js";
import { ToolError } from "../../src/tools/errors.js";
import { WorkspaceError } from "../../src/workspace/fs.js";

describe("CodedError", () => {
  it("is the one base of harness's coded errors: instanceof, code and a stable name", () => {
    const errors = [
      [new EngineError("INVARIANT", "m"), EngineError, "EngineError", "INVARIANT"],
      [new JournalError("IO", "m"), JournalError, "JournalError", "IO"],
      [new WorkspaceError("NOT_FOUND", "a.txt", "m"), WorkspaceError, "WorkspaceError", "NOT_FOUND"],
      [new ToolError("TIMEOUT", "m"), ToolError, "ToolError", "TIMEOUT"],
      [
        new SandboxUnavailableError("not_found", "m"),
        SandboxUnavailableError,
        "SandboxUnavailableError",
        "not_found",
      ],
    ] as const;
    for (const [error, type, name, code] of errors) {
      expect(error).toBeInstanceOf(CodedError);
      expect(error).toBeInstanceOf(Error);
      expect(error).toBeInstanceOf(type);
      expect(error.name).toBe(name);
      expect(error.code).toBe(code);
      expect(error.message).toBe("m");
      expect(String(error.stack)).toMatch(new RegExp(`^${name}: m`));
    }
  });

  it("keeps a workspace error's path", () => {
    expect(new WorkspaceError("NOT_FOUND", "a.txt", "m").path).toBe("a.txt");
  });
});
