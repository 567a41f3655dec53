import { execFileSync } from "node:child_process";
import { mkdir, symlink, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A hostile repository: files harness itself reads when it opens a workspace (its project config,
 * its AGENTS.md) shipped as a FIFO, a symlink to a host file or a device, or a huge sparse file.
 * None of them may hang harness, make it read (and quote) a file outside the workspace, or make it
 * hold gigabytes in memory.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const HOST_SECRET = "host-secret-bytes of a private key";

let env: NodeJS.ProcessEnv;
let script: string;
let secretFile: string;

beforeAll(async () => {
  const configDir = await tempDir("harness-config-");
  await writeFile(join(configDir, "config.json"), "{}\n");
  env = { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") };
  // The scripted model answers with the system message it was sent.
  script = join(await tempDir("harness-script-"), "echo.mjs");
  await writeFile(
    script,
    "export default function echo(messages) { return { text: messages[0].content }; }\n",
  );
  secretFile = join(await tempDir("harness-home-"), "id_rsa");
  await writeFile(secretFile, HOST_SECRET);
});

const RUN_FLAGS = ["--write", "deny", "--shell", "deny", "--sandbox", "read-only", "--json"];

/** One run in the workspace, killed (and failed) if it does not finish within 30 s. */
/** Run in `workspace`; a run still going after `killAfterMs` is the hang these tests look for. */
async function runIn(workspace: string, killAfterMs = 30_000) {
  const child = startHarness(["run", "--script", script, "--workspace", workspace, ...RUN_FLAGS, "hi"], {
    env,
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
  try {
    return await finished(child);
  } finally {
    clearTimeout(timer);
  }
}

describe("a repository's harness.config.json", () => {
  it("as a FIFO is refused at once (exit 64), not waited on forever", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    execFileSync("mkfifo", [join(workspace, "harness.config.json")]);
    const started = Date.now();
    const result = await runIn(workspace);
    expect(Date.now() - started).toBeLessThan(20_000);
    expectExit(result, 64);
    expect(result.stderr).toContain(
      "project config (harness.config.json): is not a regular file (a FIFO, socket or device)",
    );
  });

  it("as a symlink to a host file is refused without reading or quoting the file", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    await symlink(secretFile, join(workspace, "harness.config.json"));
    const result = await runIn(workspace);
    expectExit(result, 64);
    expect(result.stderr).toContain(
      "project config (harness.config.json): is a symbolic link leading outside the workspace",
    );
    // Before, JSON.parse's message quoted the start of the file it was pointed at.
    expect(result.stdout + result.stderr).not.toContain("host-secre");
  });

  it("as a symlink to /dev/zero is refused without reading it", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    await symlink("/dev/zero", join(workspace, "harness.config.json"));
    const result = await runIn(workspace);
    expectExit(result, 64);
    expect(result.stderr).toContain("is a symbolic link leading outside the workspace");
  });

  it("over 1 MiB (a sparse 4 GiB file) is refused by its size, never read", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    const file = join(workspace, "harness.config.json");
    await writeFile(file, "");
    await truncate(file, 4 * 1024 ** 3);
    const result = await runIn(workspace);
    expectExit(result, 64);
    expect(result.stderr).toContain(
      `project config (harness.config.json): is ${4 * 1024 ** 3} bytes; a config file may hold at most 1048576`,
    );
  });

  it("as a symlink to a file inside the workspace is still read", async () => {
    const workspace = await workspaceWith({
      "notes.txt": "hi\n",
      "config/harness.json": JSON.stringify({ no_such_section: true }),
    });
    await symlink("config/harness.json", join(workspace, "harness.config.json"));
    const result = await runIn(workspace);
    // Read and parsed: its unknown key is what refuses the run.
    expectExit(result, 64);
    expect(result.stderr).toContain("project config (harness.config.json)");
    expect(result.stderr).toContain("no_such_section");
  });
});

describe("a repository's AGENTS.md", () => {
  it("as a FIFO, at the root and nested, is skipped: the run finishes and no instructions are sent", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    await mkdir(join(workspace, "sub"));
    execFileSync("mkfifo", [join(workspace, "AGENTS.md"), join(workspace, "sub", "AGENTS.md")]);
    const result = await runIn(workspace);
    expectExit(result, 0);
    expect(String(jsonSummary(result).answer)).not.toContain("<instructions>");
  });

  it("as a sparse file over 4 GiB is hashed whole but only its first 32 KiB are held and sent", async () => {
    const rules = `Project rules: run the tests.\n${"keep it short. ".repeat(3000)}`;
    const workspace = await workspaceWith({ "notes.txt": "hi\n", "AGENTS.md": rules });
    // Larger than the biggest buffer Node can allocate: only a chunked read can take its digest.
    // (Before, it was read whole: a 2 GiB file cost over 4 GiB of memory, a bigger one failed the run.)
    const size = 4 * 1024 ** 3 + 1024 ** 2;
    await truncate(join(workspace, "AGENTS.md"), size);
    // Reading and hashing 4 GiB took 18-38 s here, more beside other test files: a longer guard
    // than the hang tests', still a bound.
    const result = await runIn(workspace, 110_000);
    expectExit(result, 0);
    const session = String(jsonSummary(result).session);
    const [loaded] = ofType(await readJournal(workspace, session), "instructions.loaded");
    const file = ((loaded?.data.files ?? []) as Record<string, unknown>[]).find(
      (f) => f.source === "workspace",
    );
    expect(file).toMatchObject({ path: "AGENTS.md", bytes: size, truncated: true });
    expect(String(file?.text).startsWith(rules.slice(0, 32768))).toBe(true);
    expect(String(file?.text)).toContain(
      `[harness: AGENTS.md is ${size} bytes; only its first 32768 bytes are included]`,
    );
    expect(String(jsonSummary(result).answer)).toContain(
      `<instructions>\n${rules.slice(0, 32768)}\n[harness: AGENTS.md is`,
    );
  }, 150_000);
});

describe("a repository's huge files", () => {
  it("harness audit of a workspace holding a sparse 3 GiB file finishes instead of failing with an internal error", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hi\n", "mid.bin": "m" });
    await writeFile(join(workspace, "big.bin"), "");
    await truncate(join(workspace, "big.bin"), 3 * 1024 ** 3);
    // Over the 64 MiB keep limit: hashed in chunks, and a change to it is still found.
    await truncate(join(workspace, "mid.bin"), 100 * 1024 ** 2);
    const run = await runIn(workspace);
    expectExit(run, 0);
    const session = String(jsonSummary(run).session);
    const audit = (args: string[] = []) =>
      finished(startHarness(["audit", session, "--workspace", workspace, ...args], { env }));
    const clean = await audit();
    expectExit(clean, 0);
    // The record holds the 3 GiB file by its size only: audit says it cannot vouch for its content.
    expect(clean.stdout).not.toContain("nothing changed outside it");
    expect(clean.stdout).toContain("unverified big.bin");
    expect(clean.stdout).toContain("the workspace matches the record except for content it cannot hold");
    await writeFile(join(workspace, "mid.bin"), "changed", { flag: "r+" });
    const changed = await audit();
    expectExit(changed, 1);
    expect(changed.stdout).toContain("modified  mid.bin");
  }, 60_000);
});
