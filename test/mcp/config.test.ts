import { describe, expect, it } from "vitest";
import { currentBinding, judgeApproval } from "../../src/mcp/approval.js";
import {
  DEFAULT_STARTUP_TIMEOUT_MS,
  DEFAULT_TOOL_TIMEOUT_MS,
  definitionDigest,
  McpConfigError,
  type McpServerDefinition,
  parseMcpServer,
  parseMcpServers,
  toolEnabled,
} from "../../src/mcp/config.js";
import { LineSplitter } from "../../src/mcp/lines.js";
import { selectServers } from "../../src/mcp/selection.js";
import { digestOf } from "../../src/shared/hash.js";

const SOURCE = "~/.config/harness/config.json";

function problem(name: string, raw: unknown): string {
  try {
    parseMcpServer(name, raw, SOURCE);
  } catch (error) {
    expect(error).toBeInstanceOf(McpConfigError);
    expect(error).toMatchObject({ code: "MCP_CONFIG_INVALID", server: name });
    return (error as Error).message;
  }
  throw new Error("expected the definition to be refused");
}

describe("an MCP server definition", () => {
  it("fills in the defaults of a stdio server", () => {
    expect(parseMcpServer("github", { command: "github-mcp", args: ["stdio"] }, SOURCE)).toEqual({
      command: "github-mcp",
      args: ["stdio"],
      env: {},
      pass_env: [],
      sandbox: "workspace-write",
      network: false,
      read_paths: [],
      startup_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
      tool_timeout_ms: DEFAULT_TOOL_TIMEOUT_MS,
      required: false,
      trusted: false,
    });
    expect(DEFAULT_STARTUP_TIMEOUT_MS).toBe(30_000);
    expect(DEFAULT_TOOL_TIMEOUT_MS).toBe(120_000);
  });

  it("fills in the defaults of a remote server", () => {
    expect(
      parseMcpServer("docs", { url: "https://mcp.example.com/mcp", bearer_token_env: "DOCS_TOKEN" }, SOURCE),
    ).toEqual({
      url: "https://mcp.example.com/mcp",
      headers: {},
      bearer_token_env: "DOCS_TOKEN",
      transport: "auto",
      startup_timeout_ms: 30_000,
      tool_timeout_ms: 120_000,
      required: false,
      trusted: false,
    });
  });

  it("refuses bad definitions with the file, the server, the field and what is wrong", () => {
    expect(problem("github", { command: "x", url: "https://a.example" })).toBe(
      `${SOURCE}: mcp_servers.github: a server needs exactly one of \`command\` (a stdio server harness starts) or \`url\` (a remote server)`,
    );
    expect(problem("github", { args: [] })).toContain("exactly one of `command`");
    expect(problem("github", { command: "x", enviroment: {} })).toBe(
      `${SOURCE}: mcp_servers.github: unknown key "enviroment"`,
    );
    expect(problem("docs", { url: "https://a.example", sandbox: "off" })).toBe(
      `${SOURCE}: mcp_servers.docs: unknown key "sandbox" (sandbox, network, env and cwd apply to stdio servers only)`,
    );
    expect(problem("github", { command: "x", startup_timeout_ms: -5 })).toMatch(
      /^~\/\.config\/harness\/config\.json: mcp_servers\.github\.startup_timeout_ms: /,
    );
    expect(problem("github", { command: "x", env: { "BAD NAME": "1" } })).toBe(
      `${SOURCE}: mcp_servers.github.env.BAD NAME: not a variable name`,
    );
    expect(problem("github", { command: "x", read_paths: ["relative/dir"] })).toBe(
      `${SOURCE}: mcp_servers.github.read_paths.0: must be absolute or start with ~/`,
    );
    expect(problem("github", { command: "x", read_paths: ["/opt/ok", "~/.ssh/keys"] })).toBe(
      `${SOURCE}: mcp_servers.github.read_paths.1: lies in ~/.ssh, which holds credentials`,
    );
    expect(problem("github", { command: "x", read_paths: ["~"] })).toContain("would show a whole directory");
    expect(() =>
      parseMcpServer("github", { command: "x", read_paths: ["~/.npm", "/opt/srv"] }, SOURCE),
    ).not.toThrow();
    expect(problem("docs", { url: "ftp://files.example" })).toBe(
      `${SOURCE}: mcp_servers.docs.url: must be an http:// or https:// URL`,
    );
    expect(problem("github", "github-mcp")).toBe(
      `${SOURCE}: mcp_servers.github: a server definition must be a JSON object`,
    );
  });

  it("takes server names that stay plain identifiers inside tool names", () => {
    expect(problem("my__server", { command: "x" })).toContain('letters, digits, "-" or single "_"');
    expect(problem("has space", { command: "x" })).toContain("becomes part of tool names");
    expect(problem("x".repeat(33), { command: "x" })).toContain("1-32");
    expect(() => parseMcpServer("my_server-2", { command: "x" }, SOURCE)).not.toThrow();
  });

  it("parses a whole mcp_servers section and names the server that is wrong", () => {
    const servers = parseMcpServers({ a: { command: "a" }, b: { url: "http://127.0.0.1:3001/mcp" } }, SOURCE);
    expect(Object.keys(servers)).toEqual(["a", "b"]);
    expect(() => parseMcpServers({ a: { command: "a" }, b: { command: 3 } }, SOURCE)).toThrow(
      /mcp_servers\.b\.command: /,
    );
    expect(() => parseMcpServers([], SOURCE)).toThrow("`mcp_servers` must be an object of named servers");
  });
});

describe("definitionDigest", () => {
  it("is the SHA-256 of the canonical definition: what a user approves", () => {
    const written = parseMcpServer("github", { command: "github-mcp", args: ["stdio"] }, SOURCE);
    expect(definitionDigest(written)).toMatch(/^[0-9a-f]{64}$/);
    expect(definitionDigest(written)).toBe(digestOf(written));
  });

  it("is the same whether a default is written out or left out, and in any key order", () => {
    const short = parseMcpServer("s", { command: "srv", args: ["--x"] }, SOURCE);
    const spelled = parseMcpServer(
      "s",
      { sandbox: "workspace-write", args: ["--x"], tool_timeout_ms: 120_000, command: "srv", network: false },
      SOURCE,
    );
    expect(definitionDigest(spelled)).toBe(definitionDigest(short));
  });

  it("changes with anything that changes what runs", () => {
    const base = { command: "srv", args: ["--x"] };
    const digest = (raw: Record<string, unknown>) => definitionDigest(parseMcpServer("s", raw, SOURCE));
    const variants = [
      { ...base, command: "srv2" },
      { ...base, args: ["--y"] },
      { ...base, env: { A: "1" } },
      { ...base, pass_env: ["GITHUB_TOKEN"] },
      { ...base, sandbox: "off" },
      { ...base, network: true },
      { ...base, read_paths: ["/opt/srv"] },
      { ...base, cwd: "tools" },
    ];
    const digests = new Set([digest(base), ...variants.map(digest)]);
    expect(digests.size).toBe(variants.length + 1);
  });
});

describe("toolEnabled", () => {
  it("offers every tool by default, only enabled_tools when given, never disabled_tools", () => {
    const all = parseMcpServer("s", { command: "x" }, SOURCE);
    expect(toolEnabled(all, "anything")).toBe(true);
    const some = parseMcpServer(
      "s",
      { command: "x", enabled_tools: ["a", "b"], disabled_tools: ["b"] },
      SOURCE,
    );
    expect(["a", "b", "c"].map((tool) => toolEnabled(some, tool))).toEqual([true, false, false]);
  });
});

describe("selectServers", () => {
  const user = { github: parseMcpServer("github", { command: "github-mcp" }, SOURCE) };
  const proposed = parseMcpServer("db", { command: "db-mcp", args: ["--ro"] }, "harness.config.json");
  const changed = parseMcpServer("db", { command: "db-mcp", args: ["--rw"] }, "harness.config.json");
  const workspace = "/nonexistent-workspace";
  const none = (_name: string, definition: McpServerDefinition) =>
    judgeApproval(undefined, currentBinding(definition, workspace));

  it("starts the user's servers and never a project proposal that was not approved", () => {
    const selection = selectServers(user, { db: proposed }, none);
    expect(selection.start.map((server) => [server.name, server.source])).toEqual([["github", "user"]]);
    expect(selection.unapproved).toEqual([
      expect.objectContaining({
        name: "db",
        definition: proposed,
        source: "project",
        digest: definitionDigest(proposed),
        verdict: expect.objectContaining({ approved: false, kind: "none" }),
      }),
    ]);
  });

  it("starts a proposal approved here with its exact digest, and not once its definition changed", () => {
    const recorded = [currentBinding(proposed, workspace)];
    const approved = (name: string, definition: McpServerDefinition) =>
      judgeApproval(name === "db" ? recorded : undefined, currentBinding(definition, workspace));
    expect(selectServers(user, { db: proposed }, approved).start.map((server) => server.name)).toEqual([
      "github",
      "db",
    ]);
    const after = selectServers(user, { db: changed }, approved);
    expect(after.start.map((server) => server.name)).toEqual(["github"]);
    expect(after.unapproved.map((server) => server.digest)).toEqual([definitionDigest(changed)]);
    expect(after.unapproved[0]?.verdict).toMatchObject({ approved: false, kind: "changed" });
  });

  it("lets the user's own definition win over a project's of the same name", () => {
    const selection = selectServers(user, { github: proposed }, none);
    expect(selection.start).toEqual([
      { name: "github", definition: user.github, source: "user", digest: definitionDigest(user.github) },
    ]);
    expect(selection.shadowed).toEqual(["github"]);
  });
});

describe("LineSplitter", () => {
  it("joins a line split across chunks, drops the newline and a trailing CR, keeps an unfinished line", () => {
    const lines = new LineSplitter(64);
    expect(lines.push(Buffer.from('{"a":'))).toEqual([]);
    expect(lines.push(Buffer.from('1}\r\n{"b":2}\n{"c"'))).toEqual(['{"a":1}', '{"b":2}']);
    expect(lines.push(Buffer.from(":3}\n"))).toEqual(['{"c":3}']);
  });

  it("refuses a line longer than its limit, whether it arrives whole or in pieces", () => {
    expect(() => new LineSplitter(8).push(Buffer.from("123456789\n"))).toThrow("longer than 8 bytes");
    const pieces = new LineSplitter(8);
    pieces.push(Buffer.from("12345"));
    expect(() => pieces.push(Buffer.from("6789"))).toThrow("longer than 8 bytes");
  });
});
