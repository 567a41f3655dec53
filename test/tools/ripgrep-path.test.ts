import { existsSync, realpathSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { filesMatching, locateRipgrep } from "../../src/tools/files/search/ripgrep.js";

const made: string[] = [];
const originalPath = process.env.PATH;
afterAll(async () => {
  process.env.PATH = originalPath;
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

describe("the rg harness starts for a workspace", () => {
  it("is the next one on PATH when the first lies inside the workspace, and the planted one never runs", async () => {
    const workspace = realpathSync(await mkdtemp(path.join(tmpdir(), "harness-rg-ws-")));
    const outside = realpathSync(await mkdtemp(path.join(tmpdir(), "harness-rg-out-")));
    made.push(workspace, outside);
    const marker = path.join(outside, "marker");
    await writeFile(path.join(workspace, "notes.txt"), "needle in the notes\n");
    await mkdir(path.join(workspace, ".venv/bin"), { recursive: true });
    await writeFile(path.join(workspace, ".venv/bin/rg"), `#!/bin/sh\necho ran > '${marker}'\n`);
    await chmod(path.join(workspace, ".venv/bin/rg"), 0o755);
    // PATH is read once per process, on the first lookup: this file's worker has made none yet.
    process.env.PATH = `${path.join(workspace, ".venv/bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`;
    const first = locateRipgrep();
    expect(first).toBe(path.join(workspace, ".venv/bin/rg"));
    const hits = await filesMatching({
      rg: first as string,
      root: workspace,
      files: ["notes.txt"],
      pattern: "needle",
      ignoreCase: false,
      signal: new AbortController().signal,
    });
    expect(hits).toEqual(["notes.txt"]);
    expect(existsSync(marker)).toBe(false);
  });
});
