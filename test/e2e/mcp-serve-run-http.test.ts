import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  finished,
  fixture,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  workspaceWith,
} from "./helpers.js";
import { connectServe, factsOf, serveEnv, textOf } from "./mcp-serve-client.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const TOKEN = "e2e-bearer-token-0123456789abcdef";

describe("harness_run over MCP", () => {
  it("runs a session with the server's scripted model, reports it verified, and sends progress while it runs", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const served = await connectServe([
      "--workspace",
      workspace,
      "--write",
      "allow",
      "--allow",
      "shell(grep *)",
      "--script",
      fixture("read-edit.mjs"),
    ]);
    try {
      const progress: { progress: number; message?: string | undefined }[] = [];
      let listChanged = 0;
      served.client.setNotificationHandler("notifications/resources/list_changed", () => {
        listChanged += 1;
      });
      const result = await served.client.callTool(
        {
          name: "harness_run",
          arguments: { goal: "mark the notes final", accept: ["grep -q 'status: final' notes.txt"] },
        },
        { onprogress: (p) => progress.push(p) },
      );
      expect(result.isError).toBeFalsy();
      const outcome = result.structuredContent as { status: string; session: string; answer: string };
      expect(outcome.status).toBe("verified");
      expect(outcome.answer).toBe("notes.txt now says final.");
      expect(textOf(result)).toContain(`session: ${outcome.session}`);
      expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: final\n");
      const records = await readJournal(workspace, outcome.session);
      expect(records.find((r) => r.type === "session.started")?.data.goal).toBe("mark the notes final");
      const messages = progress.map((p) => p.message ?? "");
      expect(messages).toEqual(
        expect.arrayContaining(["read_file: ok", "edit_file: ok", "acceptance passed"]),
      );
      const counts = progress.map((p) => p.progress);
      expect([...counts].sort((a, b) => a - b)).toEqual(counts);
      // The run's journal is a new resource: the client was told its list changed.
      expect(listChanged).toBe(1);
      const { resources } = await served.client.listResources();
      expect(resources.map((r) => r.uri)).toContain(`harness://sessions/${outcome.session}/events.jsonl`);
    } finally {
      await served.close();
    }
  });

  it("denies what a harness_run session would have to ask for, and the result says why and how to allow it", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const served = await connectServe(
      ["--workspace", workspace, "--write", "ask", "--script", fixture("read-edit.mjs")],
      {
        elicit: () => ({ action: "accept", content: { approve: true } }),
      },
    );
    try {
      const result = await served.client.callTool({
        name: "harness_run",
        arguments: { goal: "mark the notes final" },
      });
      const outcome = result.structuredContent as { session: string };
      const records = await readJournal(workspace, outcome.session);
      const edit = records.find((r) => r.type === "tool.result" && r.data.call_id === "edit-1");
      expect(edit?.data).toMatchObject({ status: "denied" });
      expect(String(edit?.data.content)).toContain(
        "harness_run sessions cannot ask the MCP client for approval",
      );
      expect(String(edit?.data.content)).toContain("--write allow");
      // Nobody was asked, and nothing was written.
      expect(served.elicitations).toEqual([]);
      expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: draft\n");
    } finally {
      await served.close();
    }
  });

  it("refuses acceptance commands the server's shell policy would not run, before any session starts", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const served = await connectServe(["--workspace", workspace, "--script", fixture("read-edit.mjs")]);
    try {
      const result = await served.client.callTool({
        name: "harness_run",
        arguments: { goal: "mark the notes final", accept: ["touch pwned"] },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain(
        `acceptance command "touch pwned" is not allowed by the server's shell policy`,
      );
      // No session at all: not harness_run's, and the served one opens only at a governed call.
      expect(sessionIds(workspace)).toEqual([]);
      await expect(readFile(join(workspace, "pwned"))).rejects.toThrow(/ENOENT/);
      expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: draft\n");
    } finally {
      await served.close();
    }
  });

  it("answers with a clear error when the server was started without a model", async () => {
    const workspace = await workspaceWith({});
    const served = await connectServe(["--workspace", workspace]);
    try {
      const result = await served.client.callTool({ name: "harness_run", arguments: { goal: "anything" } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain("--script FILE");
    } finally {
      await served.close();
    }
  });
});

describe("harness mcp serve --http", () => {
  it("refuses a request without the bearer token (401) and serves one that carries it", async () => {
    const workspace = await workspaceWith({ "a.txt": "alpha\n" });
    const env = { ...(await serveEnv()), MCP_TOKEN: TOKEN };
    const child = startHarness(
      ["mcp", "serve", "--workspace", workspace, "--http", "127.0.0.1:0", "--token-env", "MCP_TOKEN"],
      { env },
    );
    const exit = finished(child);
    try {
      const url = await listeningUrl(child);
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
      const bare = await fetch(url, { method: "POST", headers, body });
      expect(bare.status).toBe(401);
      const wrong = await fetch(url, {
        method: "POST",
        headers: { ...headers, authorization: "Bearer not-the-token-at-all" },
        body,
      });
      expect(wrong.status).toBe(401);

      const client = new Client({ name: "harness-e2e-http", version: "1" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
        }),
      );
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain("read_file");
      const read = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      expect(textOf(read)).toContain("alpha");
      const records = await readJournal(workspace, factsOf(read).session);
      expect(records.filter((r) => r.type === "tool.result").map((r) => r.data.name)).toEqual(["read_file"]);
      await client.close();
    } finally {
      child.kill("SIGTERM");
    }
    expectExit(await exit, 0);
  });

  it("asks both a 2026-era and a 2025-era client over HTTP by elicitation, and runs the approved call", async () => {
    const workspace = await workspaceWith({});
    const env = { ...(await serveEnv()), MCP_TOKEN: TOKEN };
    const child = startHarness(
      [
        "mcp",
        "serve",
        "-w",
        workspace,
        "--write",
        "ask",
        "--http",
        "127.0.0.1:0",
        "--token-env",
        "MCP_TOKEN",
      ],
      { env },
    );
    const exit = finished(child);
    try {
      const url = await listeningUrl(child);
      const connect = async (modern: boolean, asked: string[]) => {
        const client = new Client(
          { name: "harness-e2e-http", version: "1" },
          {
            capabilities: { elicitation: {} },
            ...(modern ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
          },
        );
        client.setRequestHandler("elicitation/create", async (request) => {
          asked.push((request.params as { message: string }).message);
          return { action: "accept", content: { approve: true } };
        });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(url), {
            requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
          }),
        );
        return client;
      };
      const modernAsked: string[] = [];
      const modern = await connect(true, modernAsked);
      const approved = await modern.callTool({
        name: "write_file",
        arguments: { path: "m.txt", content: "m\n" },
      });
      expect(approved.isError).toBeFalsy();
      expect(modernAsked).toHaveLength(1);
      expect(await readFile(join(workspace, "m.txt"), "utf8")).toBe("m\n");
      await modern.close();

      // A 2025-era client gets a session of its own, so what it declared at initialize holds.
      const legacyAsked: string[] = [];
      const legacy = await connect(false, legacyAsked);
      const allowed = await legacy.callTool({
        name: "write_file",
        arguments: { path: "l.txt", content: "l\n" },
      });
      expect(allowed.isError).toBeFalsy();
      expect(legacyAsked).toHaveLength(1);
      expect(legacyAsked[0]).toContain("l.txt");
      expect(await readFile(join(workspace, "l.txt"), "utf8")).toBe("l\n");
      await legacy.close();
    } finally {
      child.kill("SIGTERM");
    }
    expectExit(await exit, 0);
  });

  it("refuses a host that is not loopback unless --allow-remote, and --http without --token-env", async () => {
    const workspace = await workspaceWith({});
    const env = { ...(await serveEnv()), MCP_TOKEN: TOKEN };
    const remote = await finished(
      startHarness(["mcp", "serve", "-w", workspace, "--http", "0.0.0.0:0", "--token-env", "MCP_TOKEN"], {
        env,
      }),
    );
    expectExit(remote, 64);
    expect(remote.stderr).toContain("not a loopback address");
    expect(remote.stderr).toContain("--allow-remote");
    const noToken = await finished(
      startHarness(["mcp", "serve", "-w", workspace, "--http", "127.0.0.1:0"], { env }),
    );
    expectExit(noToken, 64);
    expect(noToken.stderr).toContain("--token-env");
    const unset = await finished(
      startHarness(["mcp", "serve", "-w", workspace, "--http", "127.0.0.1:0", "--token-env", "NOT_SET_VAR"], {
        env,
      }),
    );
    expectExit(unset, 64);
    expect(unset.stderr).toContain("NOT_SET_VAR");
  });
});

describe("harness mcp usage errors", () => {
  it("names what is wrong and exits 64", async () => {
    const workspace = await workspaceWith({});
    const env = await serveEnv();
    const cases: [string[], string][] = [
      [["mcp"], "which subcommand? harness mcp add | remove | list | test | approve | serve"],
      [["mcp", "frob"], 'unknown subcommand "frob"'],
      [["mcp", "serve", "-w", workspace, "--write", "sometimes"], "--write"],
      [["mcp", "serve", "-w", join(workspace, "missing")], "does not exist"],
      [["mcp", "serve", "-w", workspace, "extra"], "unexpected arguments: extra"],
    ];
    for (const [args, message] of cases) {
      const result = await finished(startHarness(args, { env }));
      expectExit(result, 64);
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toContain("    at ");
    }
  });
});

/** The URL a server started with --http prints on stderr once it listens. */
function listeningUrl(child: ReturnType<typeof startHarness>): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let seen = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      const match = /listening on (http:\/\/\S+)/.exec(seen);
      if (match?.[1]) resolve(match[1]);
    });
    child.on("exit", () => reject(new Error(`the server exited: ${seen}`)));
  });
}
