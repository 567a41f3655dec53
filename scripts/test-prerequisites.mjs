#!/usr/bin/env node
// The first step of `npm test`: the system programs the tests exercise are installed, or the run
// stops here, before build, lint and tests, with the one command that installs them (never with
// hundreds of failing tests). On Debian/Ubuntu, as root or with passwordless sudo, it installs
// what is missing itself with apt-get, as CI needs on a fresh machine. PostgreSQL is not among
// them: the tests start an embedded one (test/support/global-database.ts).
//
// Programs are looked up on PATH, and apt-get and sudo are run from it, so its tests
// (test/dev-setup/test-prerequisites.test.ts) decide with a PATH of stand-ins.
// HARNESS_PREREQUISITES_UID stands in for the user id in those tests alone.
import { spawnSync } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";

/** What the tests run, and the Debian/Ubuntu package that installs it. */
const REQUIRED = [
  { program: "bwrap", pkg: "bubblewrap", for: "the shell sandbox" },
  { program: "rg", pkg: "ripgrep", for: "grep's ripgrep engine" },
  { program: "tmux", pkg: "tmux", for: "the chat's terminal tests" },
  { program: "chromium", pkg: "chromium", for: "the session viewer's browser tests" },
  { program: "git", pkg: "git", for: "workspaces, undo and the sandbox's protected paths" },
  { program: "curl", pkg: "curl", for: "the network tests (an HTTP client inside the sandbox)" },
];

function onPath(program) {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, program);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return true;
    } catch {
      // Not here; the next directory.
    }
  }
  return false;
}

function userId() {
  const given = process.env.HARNESS_PREREQUISITES_UID;
  if (given !== undefined && /^\d+$/.test(given)) return Number(given);
  return process.getuid?.() ?? -1;
}

/** How apt-get may be run here: directly (root), through `sudo -n` (passwordless sudo), or not at all. */
function privilege() {
  if (userId() === 0) return [];
  if (onPath("sudo") && spawnSync("sudo", ["-n", "true"], { stdio: "ignore" }).status === 0) return ["sudo", "-n"];
  return undefined;
}

/** Runs apt-get (through sudo when needed) with its output shown; true when it succeeded. */
function aptGet(prefix, args) {
  // sudo resets the environment, so `env` carries the variable past it.
  const command =
    prefix.length > 0 ? [...prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", ...args] : ["apt-get", ...args];
  process.stderr.write(`test prerequisites: ${command.join(" ")}\n`);
  const result = spawnSync(command[0], command.slice(1), {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return result.status === 0;
}

function stop(missing, why) {
  const list = missing.map((each) => `  ${each.program} (${each.for})`).join("\n");
  const packages = missing.map((each) => each.pkg).join(" ");
  process.stderr.write(`npm test needs programs that are not installed:\n${list}\n${why}`);
  if (onPath("apt-get")) {
    process.stderr.write(`Install them, then run npm test again:\n\n  sudo apt-get install -y ${packages}\n\n`);
  } else {
    process.stderr.write(
      `Install them with your system's package manager (Debian/Ubuntu packages: ${packages}), then run npm test again.\n`,
    );
  }
  process.exit(1);
}

const missing = REQUIRED.filter((each) => !onPath(each.program));
if (missing.length === 0) process.exit(0);

const prefix = onPath("apt-get") ? privilege() : undefined;
if (prefix === undefined) stop(missing, "");

const installed =
  aptGet(prefix, ["update", "-qq"]) && aptGet(prefix, ["install", "-y", "-qq", ...missing.map((each) => each.pkg)]);
const still = REQUIRED.filter((each) => !onPath(each.program));
if (!installed || still.length > 0) stop(still.length > 0 ? still : missing, "apt-get could not install them.\n");
