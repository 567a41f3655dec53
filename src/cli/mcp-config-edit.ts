import { homedir } from "node:os";
import { userConfigPath } from "../config/load.js";
import { McpConfigError, parseMcpServer } from "../mcp/config.js";
import { shellQuote } from "../session/mcp-servers.js";
import { UsageError } from "../session/usage-error.js";
import { escapeForTerminal } from "../shared/terminal-text.js";
import { parse } from "./args.js";
import { updateUserConfig } from "./user-config-file.js";

/**
 * `harness mcp add | remove`: the user's own MCP servers, written to the user config's
 * `mcp_servers` the way other agents' `mcp add` commands do. Only the user config is ever
 * written: a project's harness.config.json only proposes servers, and harness never changes it.
 * The definition is checked by the same parser a run uses before anything is written, so a
 * server `add` accepted is one `harness run` starts (or reports, when it cannot).
 */

const ADD_OPTIONS = {
  env: { type: "string", multiple: true },
  "pass-env": { type: "string", multiple: true },
  required: { type: "boolean" },
  optional: { type: "boolean" },
  trust: { type: "boolean" },
  network: { type: "boolean" },
  sandbox: { type: "string" },
  cwd: { type: "string" },
  "read-path": { type: "string", multiple: true },
  url: { type: "string" },
  "bearer-token-env": { type: "string" },
  "startup-timeout": { type: "string" },
  scope: { type: "string" },
  json: { type: "boolean" },
} as const;

const REMOVE_OPTIONS = {
  scope: { type: "string" },
  json: { type: "boolean" },
} as const;

/** The split of `NAME [options] -- COMMAND ARGS...`: the command is never read as harness's flags. */
function splitCommand(args: readonly string[]): { own: string[]; command: string[] | undefined } {
  const at = args.indexOf("--");
  if (at < 0) return { own: [...args], command: undefined };
  return { own: args.slice(0, at), command: args.slice(at + 1) };
}

/** `--scope`: only `user` is written; a project's servers are its own file's, proposed for approval. */
function checkScope(scope: string | undefined): void {
  if (scope === undefined || scope === "user") return;
  if (scope === "project")
    throw new UsageError(
      "harness writes only your user config; a project proposes a server by listing it under " +
        '"mcp_servers" in its harness.config.json (edit that file yourself), and each user approves it ' +
        "with: harness mcp approve NAME",
    );
  throw new UsageError(`--scope must be user, got "${escapeForTerminal(scope)}"`);
}

function keyValues(values: readonly string[] | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values ?? []) {
    const at = value.indexOf("=");
    if (at <= 0) throw new UsageError(`${flag} takes NAME=VALUE, got "${escapeForTerminal(value)}"`);
    out[value.slice(0, at)] = value.slice(at + 1);
  }
  return out;
}

function userFile(): string {
  return userConfigPath(process.env, homedir());
}

/** `mcp_servers` of a user config being changed: an object, or a clear refusal (nothing written). */
function serversOf(config: Record<string, unknown>, file: string): Record<string, unknown> {
  const servers = config.mcp_servers ?? {};
  if (typeof servers !== "object" || servers === null || Array.isArray(servers))
    throw new UsageError(`${file}: mcp_servers must be an object of named servers; fix it first`);
  return servers as Record<string, unknown>;
}

export async function mcpAdd(args: string[]): Promise<number> {
  const { own, command } = splitCommand(args);
  const parsed = parse(own, ADD_OPTIONS);
  const v = parsed.values;
  checkScope(v.scope);
  const [name, ...extra] = parsed.positionals;
  if (name === undefined)
    throw new UsageError("which name? harness mcp add NAME -- COMMAND ARGS... (or NAME --url URL)");
  if (extra.length > 0)
    throw new UsageError(
      `unexpected arguments: ${extra.map(escapeForTerminal).join(" ")}; put the server's command after --: ` +
        `harness mcp add ${shellQuote(name)} -- ${extra.map(shellQuote).join(" ")}`,
    );
  if (v.required && v.optional) throw new UsageError("--required and --optional are exclusive");
  const raw: Record<string, unknown> = {};
  if (v.url !== undefined) {
    if (command !== undefined) throw new UsageError("a server has a command (after --) or a --url, not both");
    for (const flag of ["env", "pass-env", "network", "sandbox", "cwd", "read-path"] as const)
      if (v[flag] !== undefined)
        throw new UsageError(`--${flag} is for a server harness starts (-- COMMAND)`);
    raw.url = v.url;
    if (v["bearer-token-env"] !== undefined) raw.bearer_token_env = v["bearer-token-env"];
  } else {
    if (command === undefined || command.length === 0 || command[0] === "")
      throw new UsageError(
        `which command starts the server? put it after --: harness mcp add ${shellQuote(name)} -- COMMAND ARGS...`,
      );
    if (v["bearer-token-env"] !== undefined) throw new UsageError("--bearer-token-env is for a --url server");
    raw.command = command[0];
    if (command.length > 1) raw.args = command.slice(1);
    const env = keyValues(v.env, "--env");
    if (Object.keys(env).length > 0) raw.env = env;
    if (v["pass-env"] !== undefined) raw.pass_env = v["pass-env"];
    if (v.cwd !== undefined) raw.cwd = v.cwd;
    if (v.sandbox !== undefined) raw.sandbox = v.sandbox;
    if (v.network) raw.network = true;
    if (v["read-path"] !== undefined) raw.read_paths = v["read-path"];
  }
  if (v.required) raw.required = true;
  if (v.optional) raw.required = false;
  if (v.trust) raw.trusted = true;
  if (v["startup-timeout"] !== undefined) {
    const ms = /^[1-9][0-9]{0,8}$/.test(v["startup-timeout"]) ? Number(v["startup-timeout"]) : Number.NaN;
    if (Number.isNaN(ms))
      throw new UsageError(`--startup-timeout must be milliseconds, got "${v["startup-timeout"]}"`);
    raw.startup_timeout_ms = ms;
  }
  const file = userFile();
  let definition: ReturnType<typeof parseMcpServer>;
  try {
    definition = parseMcpServer(name, raw, "harness mcp add");
  } catch (error) {
    if (error instanceof McpConfigError) throw new UsageError(flagWords(error));
    throw error;
  }
  await updateUserConfig(file, (config) => {
    const servers = serversOf(config, file);
    if (Object.hasOwn(servers, name))
      throw new UsageError(
        `your user config (${file}) already defines an MCP server "${name}"; ` +
          `remove it first (harness mcp remove ${shellQuote(name)}) or choose another name`,
      );
    config.mcp_servers = { ...servers, [name]: raw };
  });
  if (v.json) {
    // Not the definition itself: its `env` may hold credentials the user typed.
    process.stdout.write(
      `${JSON.stringify({ added: name, file, transport: raw.url === undefined ? "stdio" : "http", required: definition.required, trusted: definition.trusted })}\n`,
    );
    return 0;
  }
  process.stdout.write(
    `added MCP server "${escapeForTerminal(name)}" to ${escapeForTerminal(file)} ` +
      `(${definition.required ? "required" : "optional"}, ${definition.trusted ? "trusted" : "untrusted"})\n` +
      `it starts with every harness run; try it now: harness mcp test ${shellQuote(name)}\n`,
  );
  return 0;
}

export async function mcpRemove(args: string[]): Promise<number> {
  const parsed = parse(args, REMOVE_OPTIONS);
  checkScope(parsed.values.scope);
  const [name, ...extra] = parsed.positionals;
  if (name === undefined)
    throw new UsageError("which server? harness mcp remove NAME (see: harness mcp list)");
  if (extra.length > 0)
    throw new UsageError(`unexpected arguments: ${extra.map(escapeForTerminal).join(" ")}`);
  const file = userFile();
  await updateUserConfig(file, (config) => {
    const servers = serversOf(config, file);
    if (!Object.hasOwn(servers, name)) {
      const names = Object.keys(servers);
      throw new UsageError(
        `your user config (${file}) defines no MCP server "${escapeForTerminal(name)}"` +
          (names.length > 0
            ? ` (it defines: ${names.map(escapeForTerminal).join(", ")})`
            : " (it defines none)") +
          "; a server the project proposes is not yours to remove: it lives in its harness.config.json",
      );
    }
    const { [name]: _gone, ...rest } = servers;
    config.mcp_servers = rest;
  });
  if (parsed.values.json) {
    process.stdout.write(`${JSON.stringify({ removed: name, file })}\n`);
    return 0;
  }
  process.stdout.write(`removed MCP server "${escapeForTerminal(name)}" from ${escapeForTerminal(file)}\n`);
  return 0;
}

/** A definition error in the words of the flags that made it (the parser names config fields). */
function flagWords(error: McpConfigError): string {
  const flag: Record<string, string> = {
    env: "--env",
    pass_env: "--pass-env",
    sandbox: "--sandbox",
    read_paths: "--read-path",
    url: "--url",
    bearer_token_env: "--bearer-token-env",
    startup_timeout_ms: "--startup-timeout",
    cwd: "--cwd",
  };
  const top = error.field?.split(".")[0];
  const named = top !== undefined && flag[top] !== undefined ? `${flag[top]}: ` : "";
  if (error.field === undefined) return `"${escapeForTerminal(error.server)}": ${error.problem}`;
  return `${named}${error.problem}`;
}
