import path from "node:path";
import type { McpStdioDefinition } from "./config.js";

/**
 * A stdio server started through a package runner (`npx -y pkg`, `pnpm dlx pkg`, `uvx pkg`...)
 * downloads its package at every start. In harness's sandbox a server has no network unless its
 * definition says `"network": true`, so the download fails, and the runner may keep retrying for
 * a long time. Judged from evidence only: the command is a package runner AND its stderr names a
 * network failure (a DNS or connection error). Any other server, or any other stderr, is not
 * guessed about.
 */

/** The package a runner was asked to fetch, for the message; undefined when the command is no runner. */
export function packageRunner(definition: McpStdioDefinition): { runner: string; pkg: string } | undefined {
  const program = path.basename(definition.command);
  const args = definition.args;
  const firstPackage = (from: number): string | undefined => {
    for (let i = from; i < args.length; i += 1) {
      const arg = args[i]!;
      if (arg === "--package" || arg === "-p" || arg === "--from" || arg === "--with") return args[i + 1];
      if (arg.startsWith("--package=")) return arg.slice("--package=".length);
      if (!arg.startsWith("-")) return arg;
    }
    return undefined;
  };
  const at = (runner: string, from: number) => {
    const pkg = firstPackage(from);
    return pkg === undefined ? undefined : { runner, pkg };
  };
  switch (program) {
    case "npx":
    case "bunx":
    case "uvx":
      return at(program, 0);
    case "pnpx":
      return at("pnpm dlx", 0);
    case "pnpm":
    case "yarn":
      return args[0] === "dlx" ? at(`${program} dlx`, 1) : undefined;
    case "npm":
      return args[0] === "exec" || args[0] === "x" ? at("npm exec", 1) : undefined;
    case "bun":
      return args[0] === "x" ? at("bun x", 1) : undefined;
    case "uv":
      return args[0] === "tool" && args[1] === "run" ? at("uv tool run", 2) : undefined;
    case "pipx":
      return args[0] === "run" ? at("pipx run", 1) : undefined;
    default:
      return undefined;
  }
}

/**
 * What a runner's stderr says when it could not reach its registry: node's and npm's DNS and
 * connection error codes, Python's (uv, pipx) resolver errors. The first match, for the message.
 */
const NETWORK_FAILURE =
  /\b(ENOTFOUND|EAI_AGAIN|ENETUNREACH|ECONNREFUSED|EHOSTUNREACH|ETIMEDOUT)\b|Temporary failure in name resolution|Name or service not known|failed to lookup address information|Network is unreachable|dns error/i;

/** How much of the latest stderr is searched: an error line, not the whole log. */
const WINDOW_CHARS = 8 * 1024;

/** Watches a runner's stderr for a network failure; `seen` is the matched evidence. */
export class NetworkFailureWatch {
  #text = "";
  #seen: string | undefined;

  /** Feed stderr bytes; returns the evidence the first time a network failure shows. */
  push(bytes: Buffer): string | undefined {
    if (this.#seen !== undefined) return undefined;
    this.#text = (this.#text + bytes.toString("utf8")).slice(-WINDOW_CHARS);
    const match = NETWORK_FAILURE.exec(this.#text);
    if (match === null) return undefined;
    this.#seen = match[0];
    return this.#seen;
  }

  get seen(): string | undefined {
    return this.#seen;
  }
}

/** Why the server did not start, and the default fix (the CLI passes one with its commands). */
export function offlineReason(
  definition: McpStdioDefinition,
  runner: { runner: string; pkg: string },
  evidence: string,
): string {
  const fetched = definition.network
    ? "and could not reach it"
    : 'and the server\'s sandbox has no network (its definition does not set "network": true)';
  return (
    `it runs ${runner.runner} ${runner.pkg}, which downloads the package at every start, ${fetched}: ` +
    `its stderr says ${evidence}`
  );
}

/**
 * The environment a package runner gets when its sandbox has no network: no download retries.
 * npm alone retries a failed DNS lookup for over a minute before it says why, longer than the
 * startup timeout; without retries it says so in seconds, and the start fails with the fix. A
 * variable the definition sets itself wins.
 */
export function noRetryEnvironment(
  definition: McpStdioDefinition,
  sandboxed: boolean,
): Record<string, string> {
  if (!sandboxed || definition.network || packageRunner(definition) === undefined) return {};
  return {
    npm_config_fetch_retries: "0",
    UV_HTTP_RETRIES: "0",
    PIP_RETRIES: "0",
    YARN_HTTP_RETRY: "0",
  };
}
