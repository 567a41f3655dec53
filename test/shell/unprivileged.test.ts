import { execFile, execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { dirsPerTest, shellStandIn } from "./helpers.js";

/**
 * The bubblewrap sandbox as an unprivileged user, the way most people run harness. When the
 * tests run as root, the harness stand-in (fixtures/run-shell.ts) is started as uid/gid 65534
 * with setpriv; otherwise the tests already run unprivileged and it starts as is.
 */
const run = promisify(execFile);
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
const dirs = dirsPerTest("harness-unpriv");
let server: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

interface Done {
  status: string;
  data: { exit_code?: number; stdout?: { head: string }; stderr?: { head: string } };
}

/** Prepare directories the unprivileged user owns, bundle the stand-in, return a runner. */
async function standIn(): Promise<(command: string) => Promise<Done>> {
  const artifacts = path.join(dirs.scratch, "artifacts");
  mkdirSync(artifacts);
  if (asRoot) {
    // mkdtemp directories are 0700: let the user reach the script, and own what it writes.
    chmodSync(dirs.scratch, 0o755);
    for (const dir of [dirs.workspace, artifacts]) chownSync(dir, NOBODY, NOBODY);
  }
  const prefix = asRoot
    ? ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", process.execPath]
    : [process.execPath];
  return async (command) => {
    const { script, argument } = await shellStandIn(dirs, command, "workspace-write");
    const [file, ...args] = prefix;
    const { stdout } = await run(file as string, [...args, script, argument], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    const done = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { event: string } & Done)
      .find((event) => event.event === "done");
    if (done === undefined) throw new Error(`no result from the stand-in: ${stdout}`);
    return done;
  };
}

describe("the workspace-write sandbox for an unprivileged user", () => {
  it("runs as that user and writes inside the workspace", async () => {
    const shell = await standIn();
    const done = await shell("id -u > whoami.txt && echo written");
    expect(done.status).toBe("ok");
    expect(done.data.stdout?.head).toBe("written\n");
    const uid = readFileSync(path.join(dirs.workspace, "whoami.txt"), "utf8").trim();
    expect(Number(uid)).toBe(asRoot ? NOBODY : process.getuid?.());
  });

  it("cannot write outside the workspace, even where the user could without the sandbox", async () => {
    const open = path.join(dirs.scratch, "open-to-all");
    mkdirSync(open);
    chmodSync(open, 0o777);
    const shell = await standIn();
    const target = path.join(open, "escaped.txt");
    const done = await shell(`echo out > ${target}`);
    expect(done.status).not.toBe("ok");
    expect(existsSync(target)).toBe(false);
  });

  it("has no network, not even to a server on this machine's loopback", async () => {
    server = createServer((socket) => socket.end("hello\n"));
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const shell = await standIn();
    const done = await shell(`exec 3<>/dev/tcp/127.0.0.1/${port} && head -c 5 <&3`);
    expect(done.status).not.toBe("ok");
    expect(done.data.stdout?.head ?? "").not.toContain("hello");
  });

  it("cannot rename, remove or rewrite .git, and cannot create one where there is none", async () => {
    execFileSync("git", ["init", "-q", dirs.workspace]);
    const configBefore = readFileSync(path.join(dirs.workspace, ".git", "config"));
    if (asRoot) execFileSync("chown", ["-R", `${NOBODY}:${NOBODY}`, dirs.workspace]);
    const shell = await standIn();
    for (const command of ["mv .git .git2", "rm -rf .git", "echo '[core] fsmonitor = x' > .git/config"]) {
      expect((await shell(command)).status, command).not.toBe("ok");
    }
    expect(readFileSync(path.join(dirs.workspace, ".git", "config"))).toEqual(configBefore);
    expect(existsSync(path.join(dirs.workspace, ".git2"))).toBe(false);

    rmSync(path.join(dirs.workspace, ".git"), { recursive: true });
    expect((await shell("git init -q . || mkdir .git/x")).status).not.toBe("ok");
    expect(existsSync(path.join(dirs.workspace, ".git"))).toBe(false);
  });

  it("sees no /etc/shadow, /run, /root, /home or host Unix socket under /tmp", async () => {
    const socketDir = path.join("/tmp", `harness-unpriv-sock-${process.pid}-${Date.now()}`);
    mkdirSync(socketDir, { mode: 0o777 });
    chmodSync(socketDir, 0o777);
    const socketPath = path.join(socketDir, "agent.sock");
    const received: string[] = [];
    server = createServer(() => {
      received.push("connection");
    });
    await new Promise<void>((resolve) => server?.listen(socketPath, resolve));
    chmodSync(socketPath, 0o777);
    try {
      const shell = await standIn();
      for (const command of ["cat /etc/shadow", "ls /run", "ls /root", "ls /home", `test -e ${socketPath}`]) {
        expect((await shell(command)).status, command).not.toBe("ok");
      }
      const connect = await shell(
        `node -e "require('net').connect('${socketPath}',()=>console.log('CONNECTED')).on('error',()=>process.exit(3))"`,
      );
      expect(connect.status).not.toBe("ok");
      expect(received).toEqual([]);
      expect(
        (await shell("node -e 'console.log(6*7)' && git --version && ls /usr/bin >/dev/null")).status,
      ).toBe("ok");
    } finally {
      rmSync(socketDir, { recursive: true, force: true });
    }
  });
});
