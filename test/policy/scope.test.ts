import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ScopedPermissions, ScopeError, validateScope } from "../../src/policy/scope.js";
import { subjectKindOf } from "../../src/policy/subject-kind.js";
import type { PermissionPort, PermissionRequest } from "../../src/runtime/ports.js";
import { digestOf, sha256Hex } from "../../src/shared/hash.js";
import { createFileTools } from "../../src/tools/builtin.js";
import type { EffectClass } from "../../src/tools/tool.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { run, tempWorkspace, type Workspace } from "../support/session.js";

const FILES = {
  "README.md": "# sum\n",
  "src/sum.ts": "export const sum = (a: number, b: number) => a - b;\n",
  ".env": "TOKEN=x\n",
};
const SCOPE = { readPaths: ["README.md", "src/sum.ts"], editPaths: ["src/sum.ts"] };

/** The wrapped policy: says "ask" for everything, so a pass-through is visible. */
const inner: PermissionPort = {
  decide: () => ({ decision: "ask", source: "inner", reason: "inner policy" }),
};
const tools = new Map(createFileTools().map((tool) => [tool.name, tool]));
const kinds = (name: string) => {
  const tool = tools.get(name);
  if (tool) return subjectKindOf(tool);
  return name === "shell" ? "command" : undefined;
};

async function scoped() {
  return new ScopedPermissions(inner, await validateScope(SCOPE, new MemoryWorkspaceFs(FILES)), kinds);
}

function request(tool: string, effect: EffectClass, args: PermissionRequest["arguments"]): PermissionRequest {
  return { tool, effect, arguments: args };
}

async function scopeError(promise: Promise<unknown>): Promise<ScopeError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ScopeError) return error;
    throw error;
  }
  throw new Error("expected a ScopeError");
}

describe("validateScope", () => {
  it("accepts existing files and normalizes their spelling", async () => {
    const scope = await validateScope(
      { readPaths: ["./README.md", "src//sum.ts"], editPaths: ["src/sum.ts"] },
      new MemoryWorkspaceFs(FILES),
    );
    expect(scope.describe()).toEqual({ read: ["README.md", "src/sum.ts"], edit: ["src/sum.ts"] });
  });

  it("rejects an edit path that is not also a read path", async () => {
    const error = await scopeError(
      validateScope({ readPaths: ["README.md"], editPaths: ["src/sum.ts"] }, new MemoryWorkspaceFs(FILES)),
    );
    expect(error.problems).toEqual([
      expect.objectContaining({ code: "EDIT_NOT_READABLE", path: "src/sum.ts" }),
    ]);
  });

  it("rejects listed paths that do not exist, directories and escaping paths, listing every problem", async () => {
    const error = await scopeError(
      validateScope(
        { readPaths: ["README.md", "src/missing.ts", "src", "../outside"], editPaths: [] },
        new MemoryWorkspaceFs(FILES),
      ),
    );
    expect(error.problems.map((p) => [p.code, p.path])).toEqual([
      ["NOT_FOUND", "src/missing.ts"],
      ["NOT_A_FILE", "src"],
      ["INVALID_PATH", "../outside"],
    ]);
    expect(error.message).not.toContain("/tmp");
  });

  describe("on disk", () => {
    let ws: Workspace | undefined;
    afterEach(async () => ws?.cleanup());

    it("rejects a symbolic link that is another name for a file", async () => {
      ws = await tempWorkspace(FILES);
      await symlink(join(ws.root, ".env"), join(ws.root, "notes.md"));
      const error = await scopeError(validateScope({ readPaths: ["notes.md"], editPaths: [] }, ws.fs));
      expect(error.problems).toEqual([expect.objectContaining({ code: "NOT_CANONICAL", path: "notes.md" })]);
      expect(error.message).not.toContain(ws.root);
    });
  });
});

describe("ScopedPermissions", () => {
  it("denies reads outside readPaths, and passes reads inside to the wrapped policy", async () => {
    const permissions = await scoped();
    const denied = await permissions.decide(request("read_file", "read_only", { path: ".env" }));
    expect(denied).toMatchObject({ decision: "deny", source: "task scope", rule: "scope.read" });
    expect(denied.reason).toContain("outside the task's read scope");
    expect(
      (await permissions.decide(request("read_file", "read_only", { path: "src/../.env" }))).decision,
    ).toBe("deny");
    expect(await permissions.decide(request("read_file", "read_only", { path: "README.md" }))).toMatchObject({
      decision: "ask",
      source: "inner",
    });
    expect(
      (await permissions.decide(request("read_file", "read_only", { path: "./src/sum.ts" }))).source,
    ).toBe("inner");
  });

  it("resolves a read's path to where it leads, unless the caller says it is canonical", async () => {
    const resolved: string[] = [];
    const scope = await validateScope(SCOPE, new MemoryWorkspaceFs(FILES));
    const permissions = new ScopedPermissions(inner, scope, kinds, async (path) => {
      resolved.push(path);
      return path === "README.md" ? ".env" : path;
    });
    const read = (canonical: boolean) =>
      permissions.decide({
        ...request("read_file", "read_only", { path: "README.md" }),
        ...(canonical ? { canonicalSubject: true as const } : {}),
      });
    expect((await read(false)).decision).toBe("deny");
    expect(await read(true)).toMatchObject({ decision: "ask", source: "inner" });
    expect(resolved).toEqual(["README.md"]);
  });

  it("denies writes outside editPaths, even to readable files", async () => {
    const permissions = await scoped();
    const denied = await permissions.decide(request("edit_file", "local_write", { path: "README.md" }));
    expect(denied).toMatchObject({ decision: "deny", rule: "scope.edit" });
    expect(denied.reason).toContain("outside the task's edit scope");
    expect(
      (await permissions.decide(request("write_file", "local_write", { path: "new.ts" }))).decision,
    ).toBe("deny");
    expect(
      (await permissions.decide(request("edit_file", "local_write", { path: "src/sum.ts" }))).source,
    ).toBe("inner");
  });

  it("allows a search only over a file in scope, never over a directory", async () => {
    const permissions = await scoped();
    expect((await permissions.decide(request("grep", "read_only", { pattern: "x" }))).decision).toBe("deny");
    expect(
      (await permissions.decide(request("grep", "read_only", { pattern: "x", path: "src" }))).decision,
    ).toBe("deny");
    expect((await permissions.decide(request("glob", "read_only", { pattern: "**/*" }))).decision).toBe(
      "deny",
    );
    expect(
      (await permissions.decide(request("grep", "read_only", { pattern: "x", path: "README.md" }))).source,
    ).toBe("inner");
  });

  it("leaves path-less reads to the wrapped policy and denies commands", async () => {
    const permissions = await scoped();
    expect(
      (await permissions.decide(request("read_artifact", "read_only", { id: "0".repeat(64) }))).source,
    ).toBe("inner");
    expect(
      await permissions.decide(request("shell", "process_execution", { command: "cat README.md" })),
    ).toMatchObject({
      decision: "deny",
      rule: "scope.effect",
    });
  });

  describe("in a run", () => {
    let ws: Workspace | undefined;
    afterEach(async () => ws?.cleanup());

    it("refuses out-of-scope calls before they run, leaving every file byte-identical", async () => {
      ws = await tempWorkspace(FILES);
      const before = await Promise.all(Object.keys(FILES).map((path) => ws!.file(path)));
      const scope = await validateScope(SCOPE, ws.fs);
      const allowAll: PermissionPort = {
        decide: () => ({ decision: "allow", source: "test", reason: "allow" }),
      };
      const permissions = new ScopedPermissions(allowAll, scope, kinds);
      const describe = { scope: scope.describe() };
      const summary = await run(ws, {
        turns: [
          {
            calls: [
              { id: "r", name: "read_file", arguments: { path: ".env" } },
              { id: "w", name: "write_file", arguments: { path: "README.md", content: "pwned\n" } },
              { id: "n", name: "write_file", arguments: { path: "src/new.ts", content: "x\n" } },
            ],
          },
          { text: "done" },
        ],
        extra: { policy: { describe, digest: digestOf(describe), permissions } },
      });
      expect(summary.status).toBe("unverified");
      const results = (await ws.events("tool.result")).map(
        (r) => r.data as { status: string; content: string },
      );
      expect(results.map((r) => r.status)).toEqual(["denied", "denied", "denied"]);
      expect(results.some((r) => r.content.includes("TOKEN"))).toBe(false);
      expect(await ws.events("tool.started")).toEqual([]);
      const after = await Promise.all(Object.keys(FILES).map((path) => ws!.file(path)));
      expect(after).toEqual(before);
      expect(after.map((text) => sha256Hex(text))).toEqual(before.map((text) => sha256Hex(text)));
      await expect(ws.file("src/new.ts")).rejects.toThrow();
    });
  });
});
