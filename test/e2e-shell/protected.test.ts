// Host-executed files are protected and the sandbox shows only what it needs: each attack runs
// through the built CLI with a scripted model, and the test checks that its effect did not happen.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const SESSION = "protect";
const GIT_CONFIG = "[core]\n\trepositoryformatversion = 0\n";
const HOOK = "#!/bin/sh\nexit 0\n";

type Call = { id: string; name: string; arguments: Record<string, unknown> };

/** Run the CLI on `workspace` with one reply per batch of calls, a private HOME and user config. */
async function run(
  workspace: string,
  batches: Call[][],
  flags: string[],
  options: { userConfig?: unknown; home?: string } = {},
) {
  const home = options.home ?? (await tempDir("harness-home-"));
  const config = join(home, "harness-config.json");
  writeFileSync(config, JSON.stringify(options.userConfig ?? {}));
  const script = await jsonScript([
    ...batches.map((calls, i) => ({ text: `step ${i}`, calls })),
    { text: "done" },
  ]);
  const child = startHarnessWith(
    ["run", "--script", script, "-w", workspace, "--session", SESSION, "--json", ...flags, "try it"],
    { HARNESS_CONFIG: config, HOME: home },
  );
  const result = await finished(child);
  const records = existsSync(join(workspace, ".harness", "sessions", SESSION))
    ? await readJournal(workspace, SESSION)
    : [];
  const results = resultsByCall(records);
  return { result, records, results, home };
}

const shell = (id: string, command: string): Call => ({ id, name: "shell", arguments: { command } });

/** SHA-256 of every file below `dir` except harness's own `.harness`, so any change shows. */
function treeDigest(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (relative: string) => {
    for (const name of readdirSync(join(dir, relative))) {
      const child = relative === "" ? name : `${relative}/${name}`;
      if (child === ".harness") continue;
      const stats = lstatSync(join(dir, child));
      if (stats.isDirectory()) walk(child);
      else if (stats.isSymbolicLink()) out[child] = `link:${readFileSync(join(dir, child)).length}`;
      else
        out[child] = createHash("sha256")
          .update(readFileSync(join(dir, child)))
          .digest("hex");
    }
  };
  walk("");
  return out;
}

function gitRepo(dir: string): void {
  execFileSync("git", ["init", "-q", dir]);
  execFileSync("git", [
    "-C",
    dir,
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@t",
    "commit",
    "-q",
    "--allow-empty",
    "-m",
    "init",
  ]);
}

describe("file tools refuse protected paths (PROTECTED_PATH), bytes unchanged", () => {
  it("write_file and edit_file on .git, nested .git, .GIT, harness.config.json, a config-named hook, and through a symlink", async () => {
    const workspace = await workspaceWith({
      ".git/config": GIT_CONFIG,
      ".git/hooks/pre-commit": HOOK,
      "sub/.git/config": GIT_CONFIG,
      "hooks/check.sh": HOOK,
      "harness.config.json": JSON.stringify({
        hooks: { before_execute: [{ kind: "admit", command: "./hooks/check.sh" }] },
      }),
    });
    symlinkSync(".git/config", join(workspace, "innocent.txt"));
    const before = treeDigest(workspace);
    const write = (id: string, path: string): Call => ({
      id,
      name: "write_file",
      arguments: { path, content: "[core]\n\tfsmonitor = touch /tmp/pwned\n" },
    });
    const targets = [
      ".git/config",
      ".git/hooks/pre-commit",
      ".git/hooks/post-checkout",
      ".GIT/config",
      "sub/.git/config",
      "harness.config.json",
      "hooks/check.sh",
      "innocent.txt",
      ".git",
    ];
    const { result, results } = await run(
      workspace,
      [
        [{ id: "read", name: "read_file", arguments: { path: ".git/config" } }],
        targets.map((path, i) => write(`w${i}`, path)),
        [
          {
            id: "edit",
            name: "edit_file",
            arguments: { path: ".git/config", old_text: "repositoryformatversion", new_text: "fsmonitor" },
          },
          {
            id: "edit-link",
            name: "edit_file",
            arguments: { path: "innocent.txt", old_text: "repositoryformatversion", new_text: "fsmonitor" },
          },
        ],
      ],
      ["--write", "allow", "--shell", "allow"],
    );
    // Every change it tried was refused: the run stops rather than ending unverified.
    expectExit(result, 2);
    expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "changes_denied" });
    expect(results.get("read")).toMatchObject({ status: "ok" });
    for (const id of [...targets.map((_, i) => `w${i}`), "edit", "edit-link"]) {
      expect(results.get(id), id).toMatchObject({ status: "denied", error_type: "PROTECTED_PATH" });
    }
    expect(treeDigest(workspace)).toEqual(before);
    expect(existsSync(join(workspace, ".GIT"))).toBe(false);
  });

  it("propose mode refuses a protected path instead of recording it, and apply refuses a proposal for a file a config names later", async () => {
    const workspace = await workspaceWith({ ".git/config": GIT_CONFIG, "hooks/check.sh": HOOK });
    const first = await run(
      workspace,
      [
        [{ id: "read", name: "read_file", arguments: { path: "hooks/check.sh" } }],
        [
          { id: "git", name: "write_file", arguments: { path: ".git/config", content: "pwned\n" } },
          {
            id: "hook",
            name: "write_file",
            arguments: { path: "hooks/check.sh", content: "#!/bin/sh\ntouch /tmp/pwned\n" },
          },
        ],
      ],
      ["--write", "propose"],
    );
    expect(first.results.get("git")).toMatchObject({ status: "denied", error_type: "PROTECTED_PATH" });
    const recorded = ofType(first.records, "proposal.recorded").map((r) => r.data.path);
    expect(recorded).toEqual(["hooks/check.sh"]);
    // The user now names the script as a hook: the pending proposal must not rewrite it.
    writeFileSync(
      join(workspace, "harness.config.json"),
      JSON.stringify({ hooks: { before_execute: [{ kind: "admit", command: "./hooks/check.sh" }] } }),
    );
    const child = startHarnessWith(["apply", SESSION, "-w", workspace, "--json"], {
      HARNESS_CONFIG: join(first.home, "harness-config.json"),
      HOME: first.home,
    });
    const applied = await finished(child);
    expect(applied.code).not.toBe(0);
    expect(readFileSync(join(workspace, "hooks/check.sh"), "utf8")).toBe(HOOK);
    expect(readFileSync(join(workspace, ".git/config"), "utf8")).toBe(GIT_CONFIG);
    const outcomes = ofType(await readJournal(workspace, SESSION), "proposal.applied").map((r) => r.data);
    expect(outcomes).toEqual([
      expect.objectContaining({
        path: "hooks/check.sh",
        outcome: "conflict",
        message: expect.stringContaining("protected"),
      }),
    ]);
  });
});

describe("the shell sandbox keeps protected paths read-only", () => {
  it("cannot rename, remove or rewrite .git, nested repositories' config, harness.config.json or hook files", async () => {
    const workspace = await workspaceWith({
      "hooks/check.sh": HOOK,
      "harness.config.json": JSON.stringify({
        hooks: { before_execute: [{ kind: "admit", command: "./hooks/check.sh" }] },
      }),
      "src/a.txt": "a\n",
    });
    gitRepo(workspace);
    gitRepo(join(workspace, "vendor", "lib"));
    const before = treeDigest(workspace);
    const { result, results } = await run(
      workspace,
      [
        [shell("mv", "mv .git .git2")],
        [shell("rm", "rm -rf .git")],
        [shell("config", "echo '[core] fsmonitor = touch /tmp/pwned' > .git/config")],
        [shell("hook", "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit")],
        [shell("nested", "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> vendor/lib/.git/config")],
        [shell("nested-mv", "mv vendor/lib/.git vendor/lib/git-old && mkdir vendor/lib/.git")],
        [shell("project", "echo '{}' > harness.config.json")],
        [shell("hookfile", "echo 'touch /tmp/pwned' >> hooks/check.sh")],
        [shell("ok", "echo changed > src/a.txt && git status --short")],
      ],
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    for (const id of ["mv", "rm", "config", "hook", "nested", "nested-mv", "project", "hookfile"]) {
      expect(results.get(id)?.status, id).not.toBe("ok");
    }
    expect(results.get("ok")).toMatchObject({ status: "ok" });
    const after = treeDigest(workspace);
    expect(after["src/a.txt"]).not.toBe(before["src/a.txt"]);
    delete after["src/a.txt"];
    delete before["src/a.txt"];
    // harness itself (on the host, not the sandbox) keeps .harness/ out of git status there.
    expect(readFileSync(join(workspace, ".git/info/exclude"), "utf8")).toMatch(/\n\.harness\/\n$/);
    delete after[".git/info/exclude"];
    delete before[".git/info/exclude"];
    expect(after).toEqual(before);
  });

  it("cannot create .git in a workspace without one, and leaves no residue", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { result, results } = await run(
      workspace,
      [
        [shell("init", "git init -q .")],
        [shell("file", "echo 'gitdir: /tmp/evil' > .git")],
        [shell("dir", "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit")],
        [shell("cfg", "echo '{\"hooks\":{}}' > harness.config.json")],
      ],
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    for (const id of ["init", "file", "dir", "cfg"]) expect(results.get(id)?.status, id).not.toBe("ok");
    expect(existsSync(join(workspace, ".git"))).toBe(false);
    expect(existsSync(join(workspace, "harness.config.json"))).toBe(false);
    expect(readdirSync(workspace).sort()).toEqual([".harness", "a.txt"]);
  });
});

describe("the sandbox shows only what the command needs", () => {
  let server: Server | undefined;
  afterAll(() => server?.close());

  it("hides HOME's credentials, /etc/shadow, /run, the real home and host sockets under /tmp", async () => {
    const home = await tempDir("harness-home-");
    mkdirSync(join(home, ".ssh"));
    writeFileSync(join(home, ".ssh", "id_rsa"), "FAKE-PRIVATE-KEY\n");
    writeFileSync(join(home, ".npmrc"), "//registry/:_authToken=FAKE-TOKEN\n");
    const realHome = process.env.HOME ?? "/root";
    const realSecret = join(realHome, `.harness-sandbox-secret-${process.pid}`);
    writeFileSync(realSecret, "REAL-HOME-SECRET\n");
    const socketDir = await tempDir("harness-sock-");
    const socketPath = join(socketDir, "agent.sock");
    const received: string[] = [];
    server = createServer((socket) => {
      received.push("connection");
      socket.on("data", (data) => received.push(data.toString()));
    });
    await new Promise<void>((resolve) => server!.listen(socketPath, resolve));
    try {
      const workspace = await workspaceWith({});
      const connect = `node -e "const s=require('net').connect('${socketPath}',()=>{s.write('stolen');console.log('CONNECTED')});s.on('error',e=>{console.log(e.code);process.exit(3)})"`;
      const { result, results } = await run(
        workspace,
        [
          [shell("ssh", 'cat "$HOME/.ssh/id_rsa"')],
          [shell("npmrc", `cat ${home}/.npmrc`)],
          [shell("shadow", "cat /etc/shadow")],
          [shell("run", "ls /run")],
          [shell("real", `cat ${realSecret}`)],
          [shell("roots", "ls /root /home")],
          [shell("socket", connect)],
          [shell("home", 'echo ok > "$HOME/scratch" && cat "$HOME/scratch" && ls -A "$HOME"')],
        ],
        ["--write", "allow", "--shell", "allow"],
        { home },
      );
      expectExit(result, 0);
      const output = (id: string) => JSON.stringify(results.get(id));
      for (const id of ["ssh", "npmrc", "shadow", "run", "real", "socket"]) {
        expect(results.get(id)?.status, id).not.toBe("ok");
      }
      expect(output("ssh")).not.toContain("FAKE-PRIVATE-KEY");
      expect(output("npmrc")).not.toContain("FAKE-TOKEN");
      expect(output("shadow")).not.toContain("root:");
      expect(output("real")).not.toContain("REAL-HOME-SECRET");
      expect(output("socket")).not.toContain("CONNECTED");
      expect(received).toEqual([]);
      expect(output("roots")).not.toContain(".harness-sandbox-secret");
      expect(results.get("home")).toMatchObject({ status: "ok" });
      expect(output("home")).toContain("scratch");
      expect(output("home")).not.toContain(".ssh");
    } finally {
      rmSync(realSecret, { force: true });
    }
  });

  it("still runs node, npm test, git, bash, sh and coreutils in a workspace under /tmp", async () => {
    const workspace = await workspaceWith({
      "package.json": JSON.stringify({ name: "tiny", version: "1.0.0", scripts: { test: "node test.js" } }),
      "test.js": "require('node:fs').writeFileSync('tested.txt', String(1 + 1));\n",
    });
    gitRepo(workspace);
    const { result, results } = await run(
      workspace,
      [
        [shell("npm", "npm test")],
        [
          shell(
            "tools",
            "sh -c 'echo sh' && bash --version | head -1 && ls && wc -l test.js && git log --oneline | wc -l",
          ),
        ],
      ],
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    expect(results.get("npm")).toMatchObject({ status: "ok" });
    expect(results.get("tools")).toMatchObject({ status: "ok" });
    expect(readFileSync(join(workspace, "tested.txt"), "utf8")).toBe("2");
    expect(jsonSummary(result)).toMatchObject({ status: "unverified" });
  });

  it("shows a read path the user config names, but not one a project config names", async () => {
    const shared = await tempDir("harness-readpath-");
    writeFileSync(join(shared, "toolchain.txt"), "TOOLCHAIN\n");
    const workspace = await workspaceWith({
      "harness.config.json": JSON.stringify({
        sandbox: { profile: "workspace-write", read_paths: [shared] },
      }),
    });
    const cat = [[shell("cat", `cat ${shared}/toolchain.txt`)]];
    const flags = ["--write", "allow", "--shell", "allow"];
    const denied = await run(workspace, cat, flags);
    expect(denied.results.get("cat")?.status).not.toBe("ok");
    rmSync(join(workspace, ".harness", "sessions", SESSION), { recursive: true });
    const allowed = await run(workspace, cat, flags, {
      userConfig: { sandbox: { profile: "workspace-write", read_paths: [shared] } },
    });
    expect(JSON.stringify(allowed.results.get("cat"))).toContain("TOOLCHAIN");
  });
});

describe("hook files are resolved next to the user config", () => {
  it("runs ./check.sh next to the config file; a hook inside the workspace is a config error (64) and nothing runs", async () => {
    const home = await tempDir("harness-home-");
    const marker = join(home, "hook-ran");
    writeFileSync(join(home, "check.sh"), `#!/bin/sh\ncat > /dev/null\ntouch '${marker}'\n`, { mode: 0o755 });
    const workspace = await workspaceWith({});
    const calls = [[shell("echo", "echo hi")]];
    const flags = ["--write", "allow", "--shell", "allow"];
    const hookConfig = (command: string) => ({
      hooks: { after_execute: [{ kind: "notify", command }] },
    });
    // Hooks run sandboxed (read-only): the script next to the config is shown to the sandbox as a
    // single read-only file. An admit hook that could not run would deny the call.
    writeFileSync(join(home, "allow.sh"), `#!/bin/sh\ncat > /dev/null\necho '{"decision":"allow"}'\n`, {
      mode: 0o755,
    });
    const admit = { hooks: { before_execute: [{ kind: "admit", command: "./allow.sh" }] } };
    const sandboxed = await run(workspace, calls, flags, { home, userConfig: admit });
    expectExit(sandboxed.result, 0);
    expect(sandboxed.results.get("echo")).toMatchObject({ status: "ok" });
    expect(ofType(sandboxed.records, "hook.decided").map((r) => r.data.decision)).toEqual(["allow"]);

    // The notify hook writes beside the config, so it needs the user's own "off" profile.
    rmSync(join(workspace, ".harness", "sessions", SESSION), { recursive: true });
    const good = await run(workspace, calls, flags, {
      home,
      userConfig: { ...hookConfig("./check.sh"), hook_commands: { sandbox: "off" } },
    });
    expectExit(good.result, 0);
    expect(existsSync(marker)).toBe(true);

    rmSync(marker);
    const inside = await workspaceWith({});
    writeFileSync(join(inside, "check.sh"), `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
    const bad = await run(inside, calls, flags, { home, userConfig: hookConfig(`${inside}/check.sh`) });
    expectExit(bad.result, 64);
    expect(bad.result.stderr).toContain("lies inside the workspace");
    expect(bad.result.stderr).toContain("harness-config.json");
    expect(existsSync(marker)).toBe(false);
  });
});
