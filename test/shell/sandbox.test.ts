import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapArguments } from "../../src/sandbox/bwrap.js";
import type { ToolError } from "../../src/tools/errors.js";
import { createShellTool, type ShellSpawnInfo, type ShellToolOptions } from "../../src/tools/shell/shell.js";
import {
  dirsPerTest,
  eventually,
  failureOf,
  liveGroup,
  liveSleeps,
  shellStandIn,
  type TestContext,
  toolContext,
  uniqueSleep,
} from "./helpers.js";

const dirs = dirsPerTest("sandbox");

function setup(options: Partial<ShellToolOptions> = {}) {
  const spawned: ShellSpawnInfo[] = [];
  const tool = createShellTool({
    sandbox: { profile: "workspace-write" },
    onSpawn: (info) => {
      spawned.push(info);
    },
    ...options,
  });
  const test: TestContext = toolContext(dirs.workspace, path.join(dirs.scratch, "artifacts"));
  return { tool, spawned, ...test };
}

function stderrOf(error: ToolError): string {
  const stderr = error.data?.stderr as { head: string; tail: string };
  return stderr.head + stderr.tail;
}

describe("bwrap arguments", () => {
  it("mounts the host view (private /tmp) before the workspace, and the protected paths after it", () => {
    const args = bwrapArguments({
      profile: "workspace-write",
      workspace: "/tmp/ws",
      hostView: ["--ro-bind", "/usr", "/usr", "--tmpfs", "/tmp"],
      protectedMounts: ["--ro-bind", "/tmp/ws/.harness", "/tmp/ws/.harness"],
      argv: ["/bin/bash", "-c", "true"],
    });
    const joined = args.join(" ");
    expect(joined).not.toContain("--ro-bind / /");
    expect(joined.indexOf("--tmpfs /tmp")).toBeLessThan(joined.indexOf("--bind /tmp/ws /tmp/ws"));
    expect(joined.indexOf("--bind /tmp/ws /tmp/ws")).toBeLessThan(
      joined.indexOf("--ro-bind /tmp/ws/.harness /tmp/ws/.harness"),
    );
    for (const flag of ["--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"]) {
      expect(args).toContain(flag);
    }
    expect(joined).toContain("--cap-drop ALL");
    expect(args.slice(-4)).toEqual(["--", "/bin/bash", "-c", "true"]);
  });
});

describe("shell tool in the bwrap sandbox (workspace-write)", () => {
  it("writes inside the workspace", async () => {
    const { tool, context } = setup();
    const output = await tool.execute(
      { command: "mkdir -p sub && printf 'sandboxed bytes' > sub/out.txt" },
      context,
    );
    expect((output.data as Record<string, unknown>).sandbox).toBe("workspace-write");
    expect(readFileSync(path.join(dirs.workspace, "sub/out.txt"), "utf8")).toBe("sandboxed bytes");
  });

  it("refuses writes outside the workspace and reports a SANDBOX_VIOLATION", async () => {
    const { tool, context } = setup();
    const outside = `/etc/harness-sandbox-probe-${process.pid}-${Date.now()}`;
    const error = await failureOf(tool.execute({ command: `echo escaped > ${outside}` }, context));
    expect(error.code).toBe("SANDBOX_VIOLATION");
    expect(error.data?.violation).toBe("outside the workspace");
    expect(stderrOf(error)).toContain("Read-only file system");
    expect(existsSync(outside)).toBe(false);
  });

  it("keeps .harness and .git/hooks read-only inside the workspace", async () => {
    mkdirSync(path.join(dirs.workspace, ".harness"));
    mkdirSync(path.join(dirs.workspace, ".git/hooks"), { recursive: true });
    const { tool, context } = setup();
    const harnessWrite = await failureOf(
      tool.execute({ command: "echo tampered > .harness/journal" }, context),
    );
    expect(harnessWrite.code).toBe("SANDBOX_VIOLATION");
    expect(String(harnessWrite.data?.violation)).toContain(".harness/journal");
    expect(existsSync(path.join(dirs.workspace, ".harness/journal"))).toBe(false);

    const hookWrite = await failureOf(
      tool.execute({ command: "printf '#!/bin/sh\\n' > .git/hooks/pre-commit" }, context),
    );
    expect(hookWrite.code).toBe("SANDBOX_VIOLATION");
    expect(existsSync(path.join(dirs.workspace, ".git/hooks/pre-commit"))).toBe(false);
  });

  it("cannot regain write access by remounting or by writing kernel settings", async () => {
    const { tool, context } = setup();
    const outside = `/etc/harness-remount-probe-${process.pid}-${Date.now()}`;
    const error = await failureOf(
      tool.execute(
        {
          command: `mount -o remount,bind,rw / 2>/dev/null; echo x > ${outside}; cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern`,
        },
        context,
      ),
    );
    expect(error.code).toBe("SANDBOX_VIOLATION");
    expect(stderrOf(error)).toContain("Read-only file system");
    expect(existsSync(outside)).toBe(false);
  });

  it("has a private /tmp", async () => {
    const hostFile = path.join("/tmp", `harness-private-tmp-${process.pid}-${Date.now()}`);
    writeFileSync(hostFile, "host");
    try {
      const { tool, context } = setup();
      const output = await tool.execute(
        { command: `test ! -e ${hostFile} && echo inside > ${hostFile} && cat ${hostFile}` },
        context,
      );
      expect(((output.data as Record<string, unknown>).stdout as { head: string }).head).toBe("inside\n");
      expect(readFileSync(hostFile, "utf8")).toBe("host");
    } finally {
      rmSync(hostFile, { force: true });
    }
  });

  describe("network", () => {
    let server: Server;
    let port: number;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((socket) => {
        connections++;
        // The client (a shell that exits at once) may reset the connection.
        socket.on("error", () => undefined);
        socket.end("hello\n");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it("cannot reach a server on the host's loopback, which the same command reaches unsandboxed", async () => {
      const command = `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`;
      const unsandboxed = setup({ sandbox: { profile: "none" } });
      const control = await unsandboxed.tool.execute({ command }, unsandboxed.context);
      expect(((control.data as Record<string, unknown>).stdout as { head: string }).head).toBe("connected\n");
      await eventually(() => connections === 1);
      expect(connections).toBe(1);

      const { tool, context } = setup();
      const error = await failureOf(tool.execute({ command }, context));
      expect(error.code).toBe("PROCESS_ERROR");
      expect(stderrOf(error)).toMatch(/Connection refused|Network is unreachable/);
      expect(connections).toBe(1);
    });
  });

  it("kills the namespace's processes on timeout, setsid escapees included", async () => {
    const { tool, context } = setup({ killGraceMs: 500 });
    const token = uniqueSleep(100);
    const escaped = uniqueSleep(100);
    const error = await failureOf(
      tool.execute(
        { command: `setsid sleep ${escaped} & sleep ${token} & sleep ${token} & wait`, timeout_ms: 2_000 },
        context,
      ),
    );
    expect(error.code).toBe("TIMEOUT");
    // bash, its two sleeps and the setsid sleep (bwrap itself is not counted).
    expect(error.data?.killed_processes).toBe(4);
    expect(liveSleeps(token)).toEqual([]);
    expect(liveSleeps(escaped)).toEqual([]);
  });

  it("cancels a sandboxed command and its children", async () => {
    const { tool, context, controller, spawned } = setup({ killGraceMs: 500 });
    const token = uniqueSleep(100);
    const running = tool.execute({ command: `sleep ${token} & sleep ${token} & wait` }, context);
    expect(await eventually(() => liveSleeps(token).length === 2)).toBe(true);
    controller.abort();
    const error = await failureOf(running);
    expect(error.code).toBe("CANCELLED");
    expect(error.data?.killed_processes).toBe(3);
    expect(spawned[0]?.sandboxed).toBe(true);
    expect(liveGroup(spawned[0]!.pgid)).toEqual([]);
    expect(liveSleeps(token)).toEqual([]);
  });

  it("leaves no survivor when the harness process is SIGKILLed mid-command", async () => {
    const token = uniqueSleep(301);
    const { script, argument } = await shellStandIn(
      dirs,
      `sleep ${token} & sleep ${token}; wait`,
      "workspace-write",
    );
    const child = spawn(process.execPath, [script, argument], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    expect(await eventually(() => liveSleeps(token).length === 2, 20_000)).toBe(true);
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    // No engine cleanup runs here: --die-with-parent and the pid namespace alone must do it.
    expect(await eventually(() => liveSleeps(token).length === 0)).toBe(true);
  });
});

describe("read-only profile", () => {
  it("refuses writes in the workspace too", async () => {
    const { tool, context } = setup({ sandbox: { profile: "read-only" } });
    writeFileSync(path.join(dirs.workspace, "existing.txt"), "original");
    const error = await failureOf(tool.execute({ command: "echo changed > existing.txt" }, context));
    expect(error.code).toBe("SANDBOX_VIOLATION");
    expect(readFileSync(path.join(dirs.workspace, "existing.txt"), "utf8")).toBe("original");
    const read = await tool.execute({ command: "cat existing.txt" }, context);
    expect(((read.data as Record<string, unknown>).stdout as { head: string }).head).toBe("original");
  });
});

describe("sandbox unavailable", () => {
  it("fails closed: SANDBOX_UNAVAILABLE and the command never runs", async () => {
    const marker = path.join(dirs.workspace, "ran.marker");
    const { tool, context, spawned } = setup({
      sandbox: { profile: "workspace-write", bwrapPath: path.join(dirs.scratch, "missing", "bwrap") },
    });
    const error = await failureOf(tool.execute({ command: `touch ${marker}` }, context));
    expect(error.code).toBe("SANDBOX_UNAVAILABLE");
    expect(error.message).toContain("apt-get install bubblewrap");
    expect(error.message).toContain("--sandbox off");
    expect(error.message).toContain('"sandbox": "off"');
    expect(error.message).not.toContain(dirs.scratch);
    expect(spawned).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it("fails closed when bwrap exists but cannot create a sandbox", async () => {
    const fake = path.join(dirs.scratch, "fake-bwrap");
    writeFileSync(fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n", {
      mode: 0o755,
    });
    const marker = path.join(dirs.workspace, "ran.marker");
    const { tool, context } = setup({ sandbox: { profile: "read-only", bwrapPath: fake } });
    const error = await failureOf(tool.execute({ command: `touch ${marker}` }, context));
    expect(error.code).toBe("SANDBOX_UNAVAILABLE");
    expect(error.message).toContain("No permissions to create new namespace");
    expect(existsSync(marker)).toBe(false);
  });
});
