import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { sandboxReadPaths } from "../../src/config/sections.js";
import { hostViewArguments, readPathProblem } from "../../src/sandbox/host-view.js";

describe("read paths the sandbox may show", () => {
  const home = "/home/u";
  it.each([
    "/",
    "/root",
    "/home",
    "/run",
    "/var/run/docker.sock",
    "/tmp",
    "/home/u",
    "/home/u/.ssh",
    "/home/u/.config/gcloud",
    "/home/u/.npmrc",
    "relative/dir",
  ])("refuses %s", (candidate) => {
    expect(readPathProblem(candidate, [home])).toBeDefined();
  });
  it.each(["/home/u/.cargo", "/home/u/.npm", "/srv/toolchains", "/home/other/.rustup"])(
    "accepts %s",
    (candidate) => {
      expect(readPathProblem(candidate, [home])).toBeUndefined();
    },
  );

  it("never mounts /, /run, /root or /home, and gives a private HOME", () => {
    const args = hostViewArguments({ home: "/home/u", readPaths: [] });
    const binds = args.flatMap((arg, i) => (arg === "--ro-bind" || arg === "--bind" ? [args[i + 2]] : []));
    for (const hidden of ["/", "/run", "/var/run", "/root", "/home", "/var", "/sys"])
      expect(binds).not.toContain(hidden);
    expect(args.join(" ")).toContain("--tmpfs /home/u");
    expect(args.join(" ")).toContain("--ro-bind /dev/null /etc/shadow");
  });
});

describe("sandbox.read_paths in config", () => {
  let root: string;
  let home: string;
  let workspace: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "harness-readpaths-"));
    home = join(root, "home");
    workspace = join(root, "ws");
    await mkdir(join(home, ".config", "harness"), { recursive: true });
    await mkdir(workspace);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));
  const load = () => loadConfig({ workspaceRoot: workspace, env: {}, homedir: home });
  const user = (value: unknown) =>
    writeFile(join(home, ".config", "harness", "config.json"), JSON.stringify(value));

  it("expands ~/ in the user config and refuses credentials with a config error naming the file", async () => {
    await user({ sandbox: { profile: "workspace-write", read_paths: ["~/.cargo", "/opt/sdk"] } });
    expect(sandboxReadPaths(await load(), home)).toEqual([join(home, ".cargo"), "/opt/sdk"]);
    await user({ sandbox: { profile: "workspace-write", read_paths: ["~/.ssh"] } });
    const loaded = await load();
    expect(() => sandboxReadPaths(loaded, home)).toThrow(/user config .*read_paths\[0\].*credentials/);
  });

  it("ignores read paths from a project config, with a notice", async () => {
    await writeFile(
      join(workspace, "harness.config.json"),
      JSON.stringify({ sandbox: { profile: "workspace-write", read_paths: ["/etc"] } }),
    );
    const loaded = await load();
    expect(sandboxReadPaths(loaded, home)).toEqual([]);
    expect(loaded.notices).toEqual([expect.stringContaining("sandbox.read_paths is ignored")]);
  });

  it("treats an empty harness.config.json as no project config", async () => {
    await writeFile(join(workspace, "harness.config.json"), "");
    expect((await load()).project).toBeUndefined();
  });
});
