import { readFileSync } from "node:fs";
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SessionGrants } from "../../src/policy/grants.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import { readAccess } from "../../src/runtime/authorize.js";
import { createGlobTool, type GlobOptions } from "../../src/tools/files/glob.js";
import type { ToolOutput } from "../../src/tools/tool.js";
import { createDiskFixture, type FsFixture, memoryFactory } from "../workspace/fixtures.js";
import { Session } from "./helpers.js";

/**
 * One contract for every way glob lists files: `rg --files` walking the tree (required: this
 * instance fails where rg is not installed), the workspace's own crawl on disk, and the same on an
 * in-memory workspace. Each case states the exact output.
 */
type Engine = { name: string; options: GlobOptions; disk: boolean };
const ENGINES: Engine[] = [
  { name: "ripgrep on disk", options: { engine: "ripgrep" }, disk: true },
  { name: "javascript on disk", options: { engine: "javascript" }, disk: true },
  { name: "javascript in memory", options: { engine: "javascript" }, disk: false },
];

const TREE: Record<string, string> = {
  "b.ts": "",
  "a.ts": "",
  "a/z.ts": "",
  "a/deep/er/x.ts": "",
  "a/deep/er/x.js": "",
  "Upper.TS": "",
  ".gitignore": "*.log\nbuild/\n",
  "app.log": "",
  "build/out.js": "",
  "src/.gitignore": "generated/\n",
  "src/generated/g.ts": "",
  ".hidden/h.ts": "",
  ".git/config": "",
  ".harness/state.ts": "",
  "sub/.harness/kept.ts": "",
  ".env": "",
  "secret/key.ts": "",
  "name with space.ts": "",
  "[bracket].ts": "",
};

describe.each(ENGINES)("glob contract: $name", ({ options, disk }) => {
  let fixture: FsFixture;
  let session: Session;
  const tool = createGlobTool(options);
  const permissions = modePolicy({ deny: ["read_file(secret/**)"] });
  const grants = new SessionGrants();
  const open = async (files: Record<string, string>): Promise<Session> => {
    fixture = disk ? await createDiskFixture(files) : await memoryFactory(files);
    session = new Session(fixture.fs);
    return session;
  };
  const glob = async (args: Record<string, unknown>, policed = true): Promise<ToolOutput> => {
    const parsed = tool.input.parse(args);
    const context = policed
      ? { ...session.context, readAccess: (file: string) => readAccess(file, { permissions, grants }) }
      : session.context;
    return tool.execute(parsed, context);
  };
  afterEach(async () => {
    await fixture.dispose();
  });

  it("lists every file (no .gitignore applied, .git and dot-files included, the root .harness never)", async () => {
    await open(TREE);
    expect((await glob({ pattern: "**" }, false)).content.split("\n")).toEqual([
      ".env",
      ".git/config",
      ".gitignore",
      ".hidden/h.ts",
      "Upper.TS",
      "[bracket].ts",
      "a.ts",
      "a/deep/er/x.js",
      "a/deep/er/x.ts",
      "a/z.ts",
      "app.log",
      "b.ts",
      "build/out.js",
      "name with space.ts",
      "secret/key.ts",
      "src/.gitignore",
      "src/generated/g.ts",
      "sub/.harness/kept.ts",
    ]);
  });

  it("matches * within a directory, ** across, braces and classes, case-sensitively, below path", async () => {
    await open(TREE);
    expect((await glob({ pattern: "*.ts" })).content).toBe("[bracket].ts\na.ts\nb.ts\nname with space.ts");
    expect((await glob({ pattern: "**/*.ts" })).content).toBe(
      [
        ".hidden/h.ts",
        "[bracket].ts",
        "a.ts",
        "a/deep/er/x.ts",
        "a/z.ts",
        "b.ts",
        "name with space.ts",
        "src/generated/g.ts",
        "sub/.harness/kept.ts",
      ].join("\n"),
    );
    expect((await glob({ pattern: "a/**/*.{js,ts}" })).content).toBe(
      "a/deep/er/x.js\na/deep/er/x.ts\na/z.ts",
    );
    expect((await glob({ pattern: "[ab].ts" })).content).toBe("a.ts\nb.ts");
    expect((await glob({ pattern: "*.TS" })).content).toBe("Upper.TS");
    expect((await glob({ pattern: "**/x.*", path: "a/deep" })).content).toBe(
      "a/deep/er/x.js\na/deep/er/x.ts",
    );
    expect((await glob({ pattern: "./a//z.ts" })).content).toBe("a/z.ts");
    const none = await glob({ pattern: "**/*.rs" });
    expect(none.content).toBe("(no matches)");
    expect(none.data).toEqual({ pattern: "**/*.rs", total: 0, truncated: false });
  });

  it("does not name files the policy denies to read_file, and names those needing an approval", async () => {
    await open(TREE);
    const out = await glob({ pattern: "**/*" });
    expect(out.content).not.toContain("secret/key.ts");
    expect(out.content).toContain(".env");
    expect(out.data).toEqual({ pattern: "**/*", total: 17, truncated: false });
  });

  it("rejects the same patterns and paths with the same codes", async () => {
    await open(TREE);
    const fails = async (args: Record<string, unknown>): Promise<string> =>
      glob(args).then(
        () => "no error",
        (error: { code?: string; message: string }) => `${error.code}: ${error.message}`,
      );
    expect(await fails({ pattern: "../*" })).toMatch(/^PATH_ESCAPE: /);
    expect(await fails({ pattern: "*", path: "../" })).toMatch(/^PATH_ESCAPE: /);
    expect(await fails({ pattern: ".harness/**" })).toMatch(/^RESERVED_PATH: /);
    expect(await fails({ pattern: "*", path: ".harness" })).toMatch(/^RESERVED_PATH: /);
    expect(await fails({ pattern: "*", path: "missing" })).toBe('NOT_FOUND: "missing" does not exist');
    expect(await fails({ pattern: "*", path: "a.ts" })).toBe('INVALID_PATH: "a.ts" is not a directory');
  });
});

describe.each(ENGINES.filter((engine) => engine.disk))("glob contract on disk: $name", ({ options }) => {
  it("neither lists nor follows symbolic links, and refuses a pattern leading out through one", async () => {
    const fixture = await createDiskFixture({ "real/a.txt": "" });
    try {
      await writeFile(path.join(fixture.outside, "o.txt"), "");
      await symlink(path.join(fixture.root, "real"), path.join(fixture.root, "alias"), "dir");
      await symlink(fixture.outside, path.join(fixture.root, "out"), "dir");
      await symlink(path.join(fixture.root, "real", "a.txt"), path.join(fixture.root, "inside-link.txt"));
      await mkdir(path.join(fixture.root, ".harness"));
      await writeFile(path.join(fixture.root, ".harness", "x.txt"), "");
      await symlink(".harness", path.join(fixture.root, "state"), "dir");
      const session = new Session(fixture.fs);
      const tool = createGlobTool(options);
      expect((await session.run(tool, { pattern: "**" })).content).toBe("real/a.txt");
      // A path through a link inside the workspace is listed under its real directory.
      expect((await session.run(tool, { pattern: "*", path: "alias" })).content).toBe("real/a.txt");
      await session.fail(tool, { pattern: "out/*.txt" }, "PATH_ESCAPE");
      await session.fail(tool, { pattern: "*", path: "out" }, "PATH_ESCAPE");
      await session.fail(tool, { pattern: "*", path: "state" }, "RESERVED_PATH");
    } finally {
      await fixture.dispose();
    }
  });
});

describe.each(ENGINES.filter((engine) => engine.disk))("glob contract on disk: $name", ({ options }) => {
  it("leaves out names no tool could address and a root .HARNESS in any case", async () => {
    const fixture = await createDiskFixture({ "ok/a.ts": "" });
    try {
      for (const dir of ["bad.", "ok/nul", ".HARNESS"]) await mkdir(path.join(fixture.root, dir));
      for (const file of ["bad./x.ts", "ok/nul/y.ts", "ok/aux.ts", "ok/b?.ts", ".HARNESS/z.ts", ".Harness"]) {
        await writeFile(path.join(fixture.root, file), "");
      }
      const out = await new Session(fixture.fs).run(createGlobTool(options), { pattern: "**" });
      expect(out.content).toBe("ok/a.ts");
    } finally {
      await fixture.dispose();
    }
  });
});

describe("glob through ripgrep", () => {
  it("a failing rg is an error in ripgrep mode; auto crawls instead", async () => {
    const fixture = await createDiskFixture({ "a.txt": "" });
    try {
      const fake = path.join(fixture.base, "broken-rg");
      await writeFile(fake, "#!/bin/sh\necho boom >&2\nexit 2\n");
      await chmod(fake, 0o755);
      const session = new Session(fixture.fs);
      const strict = createGlobTool({ engine: "ripgrep", ripgrepPath: fake });
      await expect(session.run(strict, { pattern: "*" })).rejects.toThrow(/rg exited with 2: boom/);
      const auto = createGlobTool({ ripgrepPath: fake });
      expect((await session.run(auto, { pattern: "*" })).content).toBe("a.txt");
    } finally {
      await fixture.dispose();
    }
  });

  it("a cancelled call stops rg, without waiting for it", async () => {
    const fixture = await createDiskFixture({ "a.txt": "" });
    try {
      const fake = path.join(fixture.base, "slow-rg");
      const started = path.join(fixture.base, "started");
      await writeFile(fake, `#!/bin/sh\necho $$ > '${started}'\nexec sleep 30\n`);
      await chmod(fake, 0o755);
      const session = new Session(fixture.fs);
      const running = session.fail(
        createGlobTool({ engine: "ripgrep", ripgrepPath: fake }),
        { pattern: "*" },
        "CANCELLED",
      );
      while (!(await readFile(started, "utf8").catch(() => "")).endsWith("\n"))
        await new Promise((r) => setTimeout(r, 10));
      const cancelledAt = Date.now();
      session.controller.abort();
      await running;
      // Far below the fake rg's 30 s: the call did not wait for it (loose, for a loaded machine);
      // and the process is gone, or a zombie that runs no more.
      expect(Date.now() - cancelledAt).toBeLessThan(5_000);
      const pid = Number((await readFile(started, "utf8")).trim());
      let state = "gone";
      try {
        state = readFileSync(`/proc/${pid}/stat`, "utf8")
          .replace(/^\d+ \(.*\) /, "")
          .slice(0, 1);
      } catch {}
      expect(["gone", "Z"]).toContain(state);
    } finally {
      await fixture.dispose();
    }
  });

  it("lists what `rg --files` names, matched by the pattern, never rg's own glob rules", async () => {
    const fixture = await createDiskFixture({ "x.ts": "" });
    try {
      // A stand-in rg naming files that do not exist: glob reports what rg listed, filtered.
      const fake = path.join(fixture.base, "fake-rg");
      await writeFile(fake, `#!/bin/sh\nprintf './d/e.ts\\0./top.ts\\0./.harness/s.ts\\0./n.js\\0'\n`);
      await chmod(fake, 0o755);
      const tool = createGlobTool({ engine: "ripgrep", ripgrepPath: fake });
      const session = new Session(fixture.fs);
      expect((await session.run(tool, { pattern: "*.ts" })).content).toBe("top.ts");
      expect((await session.run(tool, { pattern: "**/*.ts" })).content).toBe("d/e.ts\ntop.ts");
    } finally {
      await fixture.dispose();
    }
  });
});
