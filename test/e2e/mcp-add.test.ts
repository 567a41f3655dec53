import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  FIXTURES,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  workspaceWith,
} from "./helpers.js";
import { recordingScript, run, userConfig } from "./mcp-run-support.js";
import { connectServe } from "./mcp-serve-client.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A user config with keys of its own, written as a person formats it (odd spacing, key order). */
const HAND_WRITTEN = {
  default_profile: "mine",
  models: { mine: { provider: "openai-compatible", model: "m", base_url: "http://127.0.0.1:9/v1" } },
  mcp_servers: { kept: { command: "/usr/bin/true", required: true } },
  trusted_projects: ["/nowhere"],
};

describe("harness mcp add / remove edit the user config", () => {
  it("adds a server that list shows, keeps every other key, refuses a duplicate and an unknown name, removes it", async () => {
    const { file, env } = await userConfig(HAND_WRITTEN);
    const workspace = await workspaceWith({});

    const added = await run(
      [
        "mcp",
        "add",
        "docs",
        "--env",
        "TOKEN_FILE=/x",
        "--trust",
        "--required",
        "--json",
        "--",
        "npx",
        "-y",
        "some-pkg",
        // Past `--` it is the server's: not harness's --help.
        "--help",
      ],
      env,
    );
    expectExit(added, 0);
    expect(JSON.parse(added.stdout)).toEqual({
      added: "docs",
      file,
      transport: "stdio",
      required: true,
      trusted: true,
    });
    const written = JSON.parse(await readFile(file, "utf8"));
    expect(written).toEqual({
      ...HAND_WRITTEN,
      mcp_servers: {
        kept: HAND_WRITTEN.mcp_servers.kept,
        docs: {
          command: "npx",
          args: ["-y", "some-pkg", "--help"],
          env: { TOKEN_FILE: "/x" },
          required: true,
          trusted: true,
        },
      },
    });
    // The project's config was never written.
    await expect(readFile(join(workspace, "harness.config.json"))).rejects.toThrow(/ENOENT/);

    const listed = await run(["mcp", "list", "--workspace", workspace, "--json"], env);
    expectExit(listed, 0);
    expect(JSON.parse(listed.stdout).servers).toContainEqual(
      expect.objectContaining({ name: "docs", source: "user", starts: true, required: true, trusted: true }),
    );

    const before = await readFile(file, "utf8");
    const again = await run(["mcp", "add", "docs", "--", "other"], env);
    expectExit(again, 64);
    expect(again.stderr).toContain('already defines an MCP server "docs"');
    expect(again.stderr).toContain("harness mcp remove docs");
    const project = await run(["mcp", "add", "p", "--scope", "project", "--", "x"], env);
    expectExit(project, 64);
    expect(project.stderr).toContain("harness writes only your user config");
    const noCommand = await run(["mcp", "add", "p", "x"], env);
    expectExit(noCommand, 64);
    expect(noCommand.stderr).toContain("harness mcp add p -- x");
    expect(await readFile(file, "utf8")).toBe(before);

    const removed = await run(["mcp", "remove", "docs", "--json"], env);
    expectExit(removed, 0);
    expect(JSON.parse(removed.stdout)).toEqual({ removed: "docs", file });
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(HAND_WRITTEN);

    const unknown = await run(["mcp", "remove", "docs"], env);
    expectExit(unknown, 64);
    expect(unknown.stderr).toContain('defines no MCP server "docs" (it defines: kept)');

    const help = await run(["mcp", "add", "--help"], env);
    expectExit(help, 0);
    expect(help.stdout).toContain("harness mcp add NAME [options] -- COMMAND [ARGS...]");
  });
});

describe("a server started by npx without network", () => {
  it("fails at once with the reason and a fix that works as printed; list and the failure agree it is required", async () => {
    const workspace = await workspaceWith({});
    // An `npx` as npm's is offline: it says why on stderr, then keeps the pipe open as npm does
    // while it retries. Lives in the workspace, which the server's sandbox shows.
    const bin = join(workspace, "bin");
    await mkdir(bin);
    const npx = join(bin, "npx");
    await writeFile(
      npx,
      `#!/bin/sh
echo "retries=$npm_config_fetch_retries" > "${join(workspace, "npx-env")}"
echo "npm error code EAI_AGAIN" >&2
echo "npm error request to https://registry.npmjs.org/some-pkg failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org" >&2
exec sleep 600
`,
    );
    await chmod(npx, 0o755);
    const { env } = await userConfig({
      mcp_servers: { pkg: { command: npx, args: ["-y", "some-pkg"], required: true } },
    });
    const listed = await run(["mcp", "list", "--workspace", workspace], env);
    expect(listed.stdout).toMatch(/^pkg\s+user\s+starts \(stdio, required, untrusted\)$/m);

    const model = await recordingScript({ name: "read_file", arguments: { path: "x" } });
    const began = Date.now();
    const result = await run(["run", "--workspace", workspace, "--script", model.path, "go"], env);
    // Well before the 30 s startup timeout: the stderr said why.
    expect(Date.now() - began).toBeLessThan(20_000);
    expectExit(result, 2);
    expect(result.stderr).toContain("FAILED (required)");
    expect(result.stderr).toContain("a required MCP server could not start");
    expect(result.stderr).toContain(
      'it runs npx some-pkg, which downloads the package at every start, and the server\'s sandbox has no network (its definition does not set "network": true): its stderr says EAI_AGAIN',
    );
    expect(result.stderr).toContain(
      `let it download: harness mcp remove pkg && harness mcp add pkg --network --required --startup-timeout 120000 -- ${npx} -y some-pkg`,
    );
    expect(result.stderr).toContain("npm install -g some-pkg");
    expect(await readFile(join(workspace, "npx-env"), "utf8")).toBe("retries=0\n");
    expect(await model.requests()).toEqual([]);
  }, 60_000);
});

describe("a trusted server's read-only tools", () => {
  const SERVER = join(FIXTURES, "mcp-annotated-server.mjs");

  async function lookup(trusted: boolean) {
    const workspace = await workspaceWith({});
    const mark = join(workspace, "calls.log");
    const { env } = await userConfig({
      mcp_servers: {
        kv: {
          command: process.execPath,
          args: [SERVER],
          env: { ANNOTATED_MARK: mark },
          read_paths: [FIXTURES],
          trusted,
        },
      },
    });
    const model = await recordingScript({ name: "mcp__kv__lookup", arguments: { key: "a" } });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--write", "ask", "--json", "go"],
      env,
    );
    const summary = jsonSummary(result);
    const records = await readJournal(workspace, String(summary.session));
    return { result, summary, records, calls: await readFile(mark, "utf8").catch(() => "") };
  }

  it("run without asking under --write ask and are no change; an untrusted server's same tool asks", async () => {
    const trusted = await lookup(true);
    expectExit(trusted.result, 0);
    expect(trusted.calls).toBe("call lookup\n");
    expect(ofType(trusted.records, "approval.requested")).toEqual([]);
    const started = ofType(trusted.records, "tool.started")[0]!;
    expect(started.data.effect).toBe("read_only");
    expect(started.data.permission).toMatchObject({ decision: "allow" });
    expect(ofType(trusted.records, "tool.result")[0]!.data.status).toBe("ok");
    // Not a change: the run is not stopped for changes it was refused, nor counts one.
    expect(trusted.summary.status).toBe("unverified");

    const untrusted = await lookup(false);
    expect(untrusted.calls).toBe("");
    const result = ofType(untrusted.records, "tool.result")[0]!;
    expect(result.data.status).toBe("denied");
    // Asked (off a terminal nobody answers: denied), and counted as a change the run was refused.
    expect(ofType(untrusted.records, "approval.requested").map((r) => r.data.effect)).toEqual([
      "external_side_effect",
    ]);
    expect(result.data.error_type).toBe("USER_DENIED");
    expect([untrusted.summary.status, untrusted.summary.reason]).toEqual(["stopped", "changes_denied"]);
  }, 120_000);
});

describe("harness mcp serve", () => {
  it("marks its tools with annotations a real MCP client sees", async () => {
    const workspace = await workspaceWith({});
    const served = await connectServe(["--workspace", workspace]);
    try {
      const { tools } = await served.client.listTools();
      const of = (name: string) => tools.find((tool) => tool.name === name)?.annotations;
      for (const name of ["read_file", "glob", "grep", "read_artifact"])
        expect(of(name), name).toEqual({
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: false,
        });
      for (const name of ["write_file", "edit_file"])
        expect(of(name), name).toEqual({
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: false,
          openWorldHint: false,
        });
      // Sandboxed commands have no network.
      expect(of("shell")).toEqual({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: false,
      });
      expect(of("harness_run")).toEqual({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      });
    } finally {
      await served.close();
    }
    const unsandboxed = await connectServe(["--workspace", workspace, "--sandbox", "off"]);
    try {
      const { tools } = await unsandboxed.client.listTools();
      expect(tools.find((tool) => tool.name === "shell")?.annotations?.openWorldHint).toBe(true);
    } finally {
      await unsandboxed.close();
    }
  });

  it("leaves no session behind for a client that connects, lists and leaves; the first call opens one", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const served = await connectServe(["--workspace", workspace]);
    await served.client.listTools();
    await served.close();
    expect(sessionIds(workspace)).toEqual([]);

    const calling = await connectServe(["--workspace", workspace]);
    try {
      const result = await calling.client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      expect(result.isError).toBeFalsy();
      expect(sessionIds(workspace)).toHaveLength(1);
    } finally {
      await calling.close();
    }
  });

  it("runs harness_run with the user config's default_profile", async () => {
    const workspace = await workspaceWith({});
    const served = await connectServe(["--workspace", workspace], { config: HAND_WRITTEN });
    try {
      const result = await served.client.callTool({ name: "harness_run", arguments: { goal: "hi" } });
      const text = JSON.stringify(result);
      expect(text).not.toContain("started without a model");
      // Its session used the default profile's provider (nothing listens there: the run fails).
      const [session] = sessionIds(workspace);
      const started = ofType(await readJournal(workspace, session!), "session.started")[0]!;
      expect(JSON.stringify(started.data.provider)).toContain("openai-compatible");
    } finally {
      await served.close();
    }
  }, 60_000);
});
