import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import {
  deserializeMessage,
  type JSONRPCMessage,
  serializeMessage,
  type Transport,
} from "@modelcontextprotocol/client";
import type { StreamSummary } from "../sandbox/capture.js";
import { createSandbox } from "../sandbox/create.js";
import type { Executor, NetworkAccess, ProcessFacts, SpawnReport } from "../sandbox/executor.js";
import { isWithin, TOOLCHAIN_PATHS } from "../sandbox/host-view.js";
import { commandProfile, type SandboxOverride } from "../sandbox/profiles.js";
import type { SandboxView } from "../sandbox/sandbox.js";
import type { ServiceProcess } from "../sandbox/service.js";
import { isExecutable, pathOutside, programOutside } from "../tools/shell/locate.js";
import { expandHome, type McpStdioDefinition } from "./config.js";
import { LineSplitter } from "./lines.js";
import { noRetryEnvironment } from "./offline-start.js";

/**
 * A stdio MCP server started by harness's own executor (sandbox profile, filtered environment,
 * owned process tree), not by the SDK's StdioClientTransport, and the SDK `Transport` over its
 * pipes: newline-delimited JSON-RPC on stdin/stdout, stderr kept bounded for diagnostics.
 */

/** What every stdio server of a session starts under, beyond its own definition. */
export interface StdioHost {
  executor: Executor;
  /** Absolute host path of the workspace. */
  workspace: string;
  /** What the session's sandboxed processes may see and may not change. */
  view?: SandboxView;
  bwrapPath?: string;
  /** The run's override of configured profiles (`--sandbox off`, a read-only run). */
  override?: SandboxOverride;
  /**
   * Called once a server's process tree exists, before the handshake (the session journals it, so
   * that a resume after harness was killed finds and kills the tree). If it throws, the server is
   * stopped and does not start.
   */
  onSpawn?: (report: SpawnReport, server: string) => void | Promise<void>;
  /**
   * The session's network `policy`, for a server whose definition asks for the network: its
   * connections then go through a proxy of its own, decided by the net() rules and journaled
   * under `mcp_server:NAME`, instead of the host's network. Absent (network `off`): a server with
   * `"network": true` keeps the host's network, the user's explicit choice.
   */
  network?: (server: string) => NetworkAccess;
}

/** A stdio server whose process could not be started (bad command, sandbox unavailable...). */
export class StdioLaunchError extends Error {
  override readonly name = "StdioLaunchError";
}

/** Messages larger than this (one line) end the connection: a server cannot exhaust memory. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Start the server's process under its sandbox profile. */
export async function launchStdioServer(
  definition: McpStdioDefinition,
  host: StdioHost,
  name: string,
): Promise<{ process: ServiceProcess; facts: ProcessFacts; sandboxed: boolean }> {
  const cwd = resolveCwd(definition, host.workspace);
  const profile = commandProfile(definition.sandbox, "workspace-write", host.override);
  const unsandboxed = profile === "none" ? realpathSync(host.workspace) : undefined;
  // Unsandboxed, what the server itself starts by name must not come from the workspace either
  // (a PATH its definition sets is the user's own choice).
  const searchPath = host.executor.environment.PATH;
  const hostPath =
    unsandboxed !== undefined && searchPath !== undefined && definition.env.PATH === undefined
      ? { PATH: pathOutside(searchPath, unsandboxed) }
      : {};
  const env = { ...hostPath, ...noRetryEnvironment(definition, profile !== "none"), ...definition.env };
  const argv0 = resolveCommand(definition.command, cwd, host.executor.environment.PATH, unsandboxed);
  const view = host.view ?? {};
  const readPaths = [
    ...(view.readPaths ?? []),
    ...definition.read_paths.map((entry) => path.resolve(expandHome(entry, homedir()))),
  ];
  if (profile !== "none") {
    // Said here rather than as a bare bwrap error in the server's stderr.
    const visible = [...TOOLCHAIN_PATHS, realpathSync(host.workspace), ...readPaths];
    for (const [what, where] of [
      ["the command", realpathOr(argv0)],
      ["the working directory", cwd],
    ] as const) {
      if (!visible.some((root) => isWithin(where, root))) {
        throw new StdioLaunchError(
          `${what} ${where} is not visible in the server's sandbox; add its directory to the server's read_paths`,
        );
      }
    }
  }
  const sandbox = createSandbox({
    profile,
    ...(host.bwrapPath !== undefined ? { bwrapPath: host.bwrapPath } : {}),
    ...view,
    readPaths,
  });
  return host.executor.start({
    purpose: "mcp_server",
    argv: [argv0, ...definition.args],
    workspace: host.workspace,
    cwd,
    // Under network policy a sandboxed server's network is the proxy's; unsandboxed, nothing
    // could hold it to one, so it keeps what its definition says (the user's explicit choice).
    ...(definition.network && host.network !== undefined && profile !== "none"
      ? { egress: host.network(name) }
      : { network: definition.network }),
    profile: { sandbox, env: { pass: definition.pass_env } },
    extraEnv: env,
  });
}

function realpathOr(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

function resolveCwd(definition: McpStdioDefinition, workspace: string): string {
  const wanted = definition.cwd === undefined ? workspace : path.resolve(workspace, definition.cwd);
  try {
    // Canonical: the sandbox shows directories at their real paths.
    return realpathSync(wanted);
  } catch {
    throw new StdioLaunchError(`the working directory ${wanted} does not exist`);
  }
}

/**
 * argv[0] as an absolute path: the sandbox does no PATH lookup. For a server started without a
 * sandbox (`unsandboxedIn` is then the workspace's real path), a name is never found in the
 * workspace: a PATH directory there (an activated `.venv/bin`) holds what the model wrote, and
 * only files the definition names by path are protected from it (`named-files.ts`).
 */
function resolveCommand(
  command: string,
  cwd: string,
  searchPath: string | undefined,
  unsandboxedIn: string | undefined,
): string {
  if (command.includes("/")) {
    const resolved = path.resolve(cwd, command);
    if (!isExecutable(resolved)) throw new StdioLaunchError(`${resolved} is not an executable file`);
    return resolved;
  }
  let skipped: string | undefined;
  for (const directory of (searchPath ?? "").split(path.delimiter)) {
    if (!path.isAbsolute(directory)) continue;
    const candidate = path.join(directory, command);
    if (!isExecutable(candidate)) continue;
    if (unsandboxedIn === undefined) return candidate;
    const outside = programOutside(candidate, unsandboxedIn);
    if (outside !== undefined) return outside;
    skipped ??= candidate;
  }
  if (skipped !== undefined) {
    throw new StdioLaunchError(
      `command ${JSON.stringify(command)} was found on PATH only inside the workspace (${skipped}), which the ` +
        "agent can write, and the server runs without a sandbox: name the program by its path in the server's " +
        "definition (harness then protects that file) or let the server run sandboxed",
    );
  }
  throw new StdioLaunchError(`command ${JSON.stringify(command)} was not found on PATH`);
}

/**
 * The SDK transport over a started process. The connection is over as soon as the main process
 * exits or its stdout ends, whichever comes first: in-flight requests fail at once rather than
 * waiting for a timeout.
 */
export class ProcessTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;
  #lines = new LineSplitter(MAX_MESSAGE_BYTES);
  #closed = false;
  #stderr: StreamSummary | undefined;

  constructor(readonly process: ServiceProcess) {}

  async start(): Promise<void> {
    const { stdout } = this.process;
    stdout.on("data", (chunk: Buffer) => {
      if (this.#closed) return;
      try {
        for (const line of this.#lines.push(chunk)) {
          const message = parseLine(line);
          if (message !== undefined) this.onmessage?.(message);
        }
      } catch (error) {
        // An oversized line or a message that is JSON but not JSON-RPC: the stream cannot be
        // trusted to stay in step any more.
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
        void this.close();
      }
    });
    stdout.once("end", () => void this.close());
    stdout.once("close", () => void this.close());
    void this.process.exited.then(() => this.close());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new Error("the server process has ended");
    const { stdin } = this.process;
    await new Promise<void>((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Stop the process tree (idempotent) and report the close. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#lines.clear();
    // Report first: pending requests fail now, not after the tree's grace period.
    this.onclose?.();
    this.#stderr = await this.process.stop();
  }

  /** The server's captured stderr, once the process was stopped. */
  get stderr(): StreamSummary | undefined {
    return this.#stderr;
  }

  /** Wait until the process tree is gone and return its stderr. */
  async stopped(): Promise<StreamSummary> {
    await this.close();
    this.#stderr ??= await this.process.stop();
    return this.#stderr;
  }
}

/**
 * One line of a server's stdout as a JSON-RPC message. A line that is not JSON at all (a server
 * logging to stdout) is skipped, as the SDK's own stdio transport does; JSON that is not JSON-RPC
 * throws.
 */
function parseLine(line: string): JSONRPCMessage | undefined {
  try {
    return deserializeMessage(line);
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}
