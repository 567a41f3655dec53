// A rule on a file covers every symlink that leads to it, and a task scope holds for a file's
// real location, not the name a call gives it.
import { rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { pathResolverOf } from "../../src/policy/path-aliases.js";
import { buildPolicy } from "../../src/policy/permissions.js";
import { PolicyPermissions } from "../../src/policy/policy-permissions.js";
import { ScopedPermissions, validateScope } from "../../src/policy/scope.js";
import type { PermissionRequest } from "../../src/runtime/ports.js";
import { tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace | undefined;
afterEach(async () => ws?.cleanup());

const kinds = (tool: string) =>
  tool === "read_file" || tool === "edit_file" ? ("path" as const) : undefined;
const read = (path: string): PermissionRequest => ({
  tool: "read_file",
  effect: "read_only",
  arguments: { path },
});

describe("path rules and symlinks", () => {
  it("denies every name of a denied file: a link, a link in a directory, a path through a linked directory", async () => {
    ws = await tempWorkspace({ ".env": "A=1\n", "dir/x.txt": "x\n", "ok.txt": "ok\n" });
    await symlink(".env", join(ws.root, "link"));
    await symlink("../.env", join(ws.root, "dir", "link"));
    await symlink(".", join(ws.root, "cfg"));
    const port = new PolicyPermissions(
      buildPolicy([cliLayer({ allow: ["read_file(**)"], deny: ["read_file(.env)"] })]),
      kinds,
      pathResolverOf(ws.fs),
    );
    for (const path of ["link", "dir/link", "cfg/.env", "./link"]) {
      expect(await port.decide(read(path)), path).toMatchObject({
        decision: "deny",
        rule: "read_file(.env)",
        reason: expect.stringContaining("(a symbolic link)"),
      });
    }
    expect((await port.decide(read("ok.txt"))).decision).toBe("allow");
  });

  it("applies the built-in ask for secret files to a link that leads to one", async () => {
    ws = await tempWorkspace({ ".env": "A=1\n" });
    await symlink(".env", join(ws.root, "innocent.txt"));
    const port = new PolicyPermissions(buildPolicy([]), kinds, pathResolverOf(ws.fs));
    expect(await port.decide(read("innocent.txt"))).toMatchObject({ decision: "ask", rule: "*(**/.env)" });
  });

  it("the control: without a resolver only the name given is decided", async () => {
    ws = await tempWorkspace({ ".env": "A=1\n" });
    await symlink(".env", join(ws.root, "link"));
    const port = new PolicyPermissions(buildPolicy([cliLayer({ deny: ["read_file(.env)"] })]), kinds);
    expect((await port.decide(read("link"))).decision).toBe("allow");
  });
});

describe("task scope and symlinks", () => {
  it("denies a listed path that has since become a link to a file outside the scope", async () => {
    ws = await tempWorkspace({ "a.txt": "a\n", "secret.txt": "s\n" });
    const scope = await validateScope({ readPaths: ["a.txt"], editPaths: [] }, ws.fs);
    const inner = { decide: () => ({ decision: "allow" as const, source: "inner", reason: "inner" }) };
    const scoped = new ScopedPermissions(inner, scope, kinds, pathResolverOf(ws.fs));
    expect((await scoped.decide(read("a.txt"))).decision).toBe("allow");
    await rm(join(ws.root, "a.txt"));
    await symlink("secret.txt", join(ws.root, "a.txt"));
    expect(await scoped.decide(read("a.txt"))).toMatchObject({ decision: "deny", rule: "scope.read" });
  });
});
