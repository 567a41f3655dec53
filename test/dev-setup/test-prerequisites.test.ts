import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { REPO_ROOT } from "../e2e/helpers.js";

/**
 * `npm test` first runs scripts/test-prerequisites.mjs: it installs the missing system programs
 * with apt-get where it may (root, passwordless sudo), else stops before anything else with the
 * one command to run. Decided here through its CLI with a PATH of stand-ins: programs that are
 * "installed", an apt-get and a sudo that only record how they were called. No real apt-get runs.
 */

const SCRIPT = join(REPO_ROOT, "scripts/test-prerequisites.mjs");
const PROGRAMS = ["bwrap", "rg", "tmux", "chromium", "git", "curl"];
const PROGRAM_OF: Record<string, string> = { bubblewrap: "bwrap", ripgrep: "rg" };

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Machine {
  bin: string;
  log: string;
}

function script(path: string, body: string): void {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

/** A PATH directory holding `present` programs, plus apt-get and sudo stand-ins as asked. */
function machine(options: {
  present: string[];
  aptGet?: "works" | "fails";
  sudo?: "passwordless" | "asks";
}): Machine {
  const root = mkdtempSync(join(tmpdir(), "harness-prereq-"));
  dirs.push(root);
  const bin = join(root, "bin");
  mkdirSync(bin);
  const log = join(root, "calls.log");
  writeFileSync(log, "");
  for (const program of options.present) script(join(bin, program), "exit 0");
  // The stand-ins use only shell built-ins, and `env` through sudo.
  symlinkSync("/usr/bin/env", join(bin, "env"));
  if (options.aptGet) {
    const installs = Object.entries(PROGRAM_OF)
      .map(([pkg, program]) => `${pkg}) name=${program} ;;`)
      .join(" ");
    script(
      join(bin, "apt-get"),
      `echo "apt-get $* [DEBIAN_FRONTEND=$DEBIAN_FRONTEND]" >> '${log}'
${options.aptGet === "fails" ? "exit 100" : ""}
if [ "$1" = install ]; then
  for pkg in "$@"; do
    case "$pkg" in -*|install) continue ;; esac
    name="$pkg"; case "$pkg" in ${installs} esac
    printf '#!/bin/sh\\nexit 0\\n' > '${bin}'/"$name"; /bin/chmod 755 '${bin}'/"$name"
  done
fi`,
    );
  }
  if (options.sudo) {
    script(
      join(bin, "sudo"),
      `[ "$1" = -n ] && shift
${options.sudo === "asks" ? "exit 1" : ""}
[ "$1" = true ] && exit 0
echo "sudo $*" >> '${log}'
exec "$@"`,
    );
  }
  return { bin, log };
}

function prerequisites(at: Machine, uid: number) {
  const result = spawnSync(process.execPath, [SCRIPT], {
    env: { PATH: at.bin, HARNESS_PREREQUISITES_UID: String(uid) },
    encoding: "utf8",
  });
  return { status: result.status, stderr: result.stderr, calls: readFileSync(at.log, "utf8") };
}

const installed = (at: Machine, program: string) => existsSync(join(at.bin, program));

describe("npm test's prerequisite step", () => {
  it("with every program installed it passes at once and runs nothing", () => {
    const at = machine({ present: PROGRAMS, aptGet: "works", sudo: "passwordless" });
    expect(prerequisites(at, 1000)).toEqual({ status: 0, stderr: "", calls: "" });
  });

  it("tmux missing, not root, no sudo: stops non-zero with the one apt-get command and runs nothing", () => {
    const at = machine({ present: PROGRAMS.filter((each) => each !== "tmux"), aptGet: "works" });
    const result = prerequisites(at, 1000);
    expect(result.status).toBe(1);
    expect(result.calls).toBe("");
    expect(result.stderr).toContain("tmux (the chat's terminal tests)");
    expect(result.stderr.match(/apt-get/g)).toHaveLength(1);
    expect(result.stderr).toContain("\n  sudo apt-get install -y tmux\n");
    expect(installed(at, "tmux")).toBe(false);
  });

  it("a sudo that asks for a password is not used: the same one command is printed", () => {
    const at = machine({ present: ["rg", "git", "chromium", "curl"], aptGet: "works", sudo: "asks" });
    const result = prerequisites(at, 1000);
    expect(result.status).toBe(1);
    expect(result.calls).toBe("");
    expect(result.stderr).toContain("\n  sudo apt-get install -y bubblewrap tmux\n");
  });

  it("not root with passwordless sudo: installs the missing packages through sudo and passes", () => {
    const at = machine({ present: ["rg", "git", "curl"], aptGet: "works", sudo: "passwordless" });
    const result = prerequisites(at, 1000);
    expect(result.status).toBe(0);
    expect(result.calls.trim().split("\n")).toEqual([
      "sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq",
      "apt-get update -qq [DEBIAN_FRONTEND=noninteractive]",
      "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap tmux chromium",
      "apt-get install -y -qq bubblewrap tmux chromium [DEBIAN_FRONTEND=noninteractive]",
    ]);
    for (const program of PROGRAMS) expect(installed(at, program)).toBe(true);
  });

  it("as root: runs apt-get itself, without sudo", () => {
    const at = machine({ present: PROGRAMS.filter((each) => each !== "chromium"), aptGet: "works" });
    const result = prerequisites(at, 0);
    expect(result.status).toBe(0);
    expect(result.calls.trim().split("\n")).toEqual([
      "apt-get update -qq [DEBIAN_FRONTEND=noninteractive]",
      "apt-get install -y -qq chromium [DEBIAN_FRONTEND=noninteractive]",
    ]);
    expect(installed(at, "chromium")).toBe(true);
  });

  it("as root when apt-get fails: stops non-zero with the command to run", () => {
    const at = machine({ present: PROGRAMS.filter((each) => each !== "rg"), aptGet: "fails" });
    const result = prerequisites(at, 0);
    expect(result.status).toBe(1);
    expect(result.calls).toBe("apt-get update -qq [DEBIAN_FRONTEND=noninteractive]\n");
    expect(result.stderr).toContain("apt-get could not install them.");
    expect(result.stderr).toContain("\n  sudo apt-get install -y ripgrep\n");
  });

  it("without apt-get (not Debian/Ubuntu): stops non-zero naming the programs and their Debian packages", () => {
    const at = machine({ present: ["git", "curl"], sudo: "passwordless" });
    const result = prerequisites(at, 0);
    expect(result.status).toBe(1);
    expect(result.calls).toBe("");
    expect(result.stderr).toContain("bwrap (the shell sandbox)");
    expect(result.stderr).toContain(
      "Install them with your system's package manager (Debian/Ubuntu packages: bubblewrap ripgrep tmux chromium)",
    );
  });

  it("npm test runs the step first, before build, lint, typecheck and the tests", () => {
    const manifest = z
      .object({ scripts: z.object({ test: z.string() }) })
      .parse(JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")));
    expect(manifest.scripts.test.startsWith("node scripts/test-prerequisites.mjs && ")).toBe(true);
  });
});
