import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { secretMasks } from "../../src/sandbox/harness-secrets.js";

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-secrets-")));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** The mount targets the arguments cover, each with how: an empty file or an empty directory. */
function covered(args: string[]): Map<string, "file" | "directory"> {
  const out = new Map<string, "file" | "directory">();
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--ro-bind" && args[i + 1] === "/dev/null") out.set(args[i + 2]!, "file");
    if (args[i] === "--tmpfs") out.set(args[i + 1]!, "directory");
  }
  return out;
}

describe("which of harness's secrets the sandbox covers, and where", () => {
  it("the workspace's .harness always; a secret file inside the workspace; nothing outside what is shown", () => {
    const workspace = join(root, "ws");
    mkdirSync(join(workspace, ".harness", "sessions"), { recursive: true });
    writeFileSync(join(workspace, "tokens.json"), "{}");
    const outside = join(root, "elsewhere.key");
    writeFileSync(outside, "k");
    const args = secretMasks({
      workspace,
      secrets: [join(workspace, "tokens.json"), outside, join(root, "missing")],
      roots: [],
      keep: [workspace],
    });
    expect(covered(args)).toEqual(
      new Map([
        [join(workspace, ".harness"), "directory"],
        [join(workspace, "tokens.json"), "file"],
      ]),
    );
  });

  it("a secret in a read path is covered at every place the read path shows, the symlinked name too", () => {
    const workspace = join(root, "ws");
    mkdirSync(workspace);
    const real = join(root, "sdk");
    mkdirSync(real);
    writeFileSync(join(real, "journal.key"), "k");
    const alias = join(root, "sdk-link");
    symlinkSync(real, alias);
    const args = secretMasks({
      workspace,
      secrets: [join(alias, "journal.key")],
      roots: [
        { source: real, at: real },
        { source: real, at: alias },
      ],
      keep: [workspace],
    });
    const masks = covered(args);
    expect(masks.get(join(real, "journal.key"))).toBe("file");
    expect(masks.get(join(alias, "journal.key"))).toBe("file");
  });

  it("a secret directory holding the workspace or a hook file: everything in it but those is covered", () => {
    const config = join(root, "config-harness");
    const workspace = join(config, "projects", "ws");
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(config, "journal.key"), "k");
    writeFileSync(join(config, "hook.sh"), "#!/bin/sh\n");
    writeFileSync(join(config, "projects", "other.txt"), "x");
    const args = secretMasks({
      workspace,
      secrets: [config],
      roots: [{ source: config, at: config }],
      keep: [workspace, join(config, "hook.sh")],
    });
    const masks = covered(args);
    expect(masks.get(join(config, "journal.key"))).toBe("file");
    expect(masks.get(join(config, "projects", "other.txt"))).toBe("file");
    expect(masks.has(join(config, "hook.sh"))).toBe(false);
    expect(masks.has(workspace)).toBe(false);
    expect(masks.has(config)).toBe(false);
  });

  it("a workspace inside another workspace's .harness is covered whole", () => {
    const outer = join(root, "outer");
    const workspace = join(outer, ".harness", "sessions");
    mkdirSync(join(workspace, "s1"), { recursive: true });
    const args = secretMasks({ workspace, secrets: [], roots: [], keep: [workspace] });
    expect(covered(args).get(workspace)).toBe("directory");
  });
});
