import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, harness, PACKAGE_VERSION, removeTempDirs, workspaceWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("help, version and mistyped input", () => {
  it("harness help CMD prints that command's help, the same as CMD --help", async () => {
    const viaHelp = await harness(["help", "sessions"]);
    const viaFlag = await harness(["sessions", "--help"]);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toContain("Usage: harness sessions");
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
    const sub = await harness(["help", "mcp", "serve"]);
    expect(sub.stdout).toContain("harness mcp serve");
    const bare = await harness(["help"]);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toMatch(/^ {2}completion\s/m);
  });

  it("-v, -V, --version and version all print the version", async () => {
    for (const args of [["-v"], ["-V"], ["--version"], ["version"]]) {
      const result = await harness(args);
      expect(result.code, args.join(" ")).toBe(0);
      expect(result.stdout).toBe(`harness ${PACKAGE_VERSION}\n`);
    }
  });

  it("a mistyped command is named with the closest one, exit 64", async () => {
    const result = await harness(["sesions"]);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain('unknown command "sesions"; did you mean: harness sessions?');
    const far = await harness(["xyzzyq"]);
    expect(far.stderr).not.toContain("did you mean");
    const help = await harness(["help", "inspct"]);
    expect(help.code).toBe(64);
    expect(help.stderr).toContain("did you mean: harness inspect?");
  });

  it("an unknown option is named in our words with the closest valid one", async () => {
    const workspace = await workspaceWith({});
    const result = await harness(["sessions", "--wrkspace", workspace]);
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("harness sessions: unknown option --wrkspace; did you mean --workspace?");
    expect(result.stderr).not.toContain("TypeError");
    const missing = await harness(["sessions", "--workspace"]);
    expect(missing.code).toBe(64);
    expect(missing.stderr).toContain("--workspace needs a value");
    const switchValue = await harness(["sessions", "--json=yes"]);
    expect(switchValue.stderr).toContain("--json is a switch and takes no value");
  });

  it("--no-color turns colour off even when FORCE_COLOR asks for it; --quiet drops progress", async () => {
    const workspace = await workspaceWith({});
    const env = { ...process.env, FORCE_COLOR: "1" } as NodeJS.ProcessEnv;
    delete env.NO_COLOR;
    const bin = (await import("./helpers.js")).BIN;
    const run = (args: string[]) =>
      spawnSync(process.execPath, [bin, ...args], { env, encoding: "utf8", cwd: workspace });
    const colored = run(["demo", "--workspace", workspace]);
    expect(colored.stdout + colored.stderr).toContain("\u001b[");
    const plain = run(["demo", "--no-color", "--workspace", `${workspace}/b`]);
    expect(plain.status).toBe(0);
    expect(plain.stdout + plain.stderr).not.toContain("\u001b[");
    const quiet = run(["--quiet", "demo", "--no-color", "--workspace", `${workspace}/c`]);
    expect(quiet.status).toBe(0);
    expect(quiet.stderr).not.toContain("model request");
    expect(plain.stderr).toContain("model request");
  });
});
