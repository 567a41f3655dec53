import type { Server } from "node:net";
import type { ArtifactStore } from "../artifacts/store.js";
import type { EgressProxy, EgressProxyOptions } from "../network/proxy.js";
import type { Quarantined } from "./absent-guard.js";
import { type BackgroundProcess, type BackgroundStop, startBackground } from "./background.js";
import type { CaptureLimits } from "./capture.js";
import type { Refusal } from "./denied-programs.js";
import { bundleEnvironment, NetworkUnavailableError } from "./egress-bridge.js";
import { type EnvPolicy, filterEnvironment } from "./env.js";
import { type ProcessResult, type RunProcessOptions, runProcess } from "./process.js";
import type { Launch, Sandbox, SandboxProfile } from "./sandbox.js";
import { type Secret, secretFilter, secretsOf } from "./scrub.js";
import { type ServiceProcess, startService } from "./service.js";
import type { SessionNetwork } from "./session-network.js";
import type { SpawnIdentity } from "./tree.js";

/**
 * The one way harness starts a process on behalf of a model or a configuration. Every shell
 * call, acceptance command and command hook goes through `Executor.execute`, which applies the
 * same policy to each: the environment filtered by one filter (env.ts), the command wrapped in
 * its sandbox profile, the whole process tree owned and killed (runProcess), output bounded and
 * streamed to artifacts, and the values of secrets in harness's own environment scrubbed from
 * that output before anyone sees it.
 */

/** Why a process runs. */
export type ProcessPurpose = "shell" | "acceptance" | "hook" | "mcp_server" | "workspace";

/** What a process runs under: how it is confined and which variables it may see. */
export interface ProcessProfile {
  sandbox: Sandbox;
  env: EnvPolicy;
}

/** What the journal records about a process: never the environment's values, only names. */
export interface ProcessFacts {
  purpose: ProcessPurpose;
  sandbox_profile: SandboxProfile;
  /** Names of the variables the process received, sorted. */
  env_names: string[];
}

export interface SpawnReport extends SpawnIdentity, ProcessFacts {
  /** Whether the process tree is inside the OS sandbox (then harness's death kills it by itself). */
  sandboxed: boolean;
}

export interface ExecuteRequest {
  purpose: ProcessPurpose;
  /** argv[0] is an absolute executable path (the sandbox does no PATH lookup). */
  argv: readonly string[];
  /** Absolute host path of the workspace: the working directory. */
  workspace: string;
  profile: ProcessProfile;
  timeoutMs: number;
  killGraceMs?: number;
  drainMs?: number;
  signal?: AbortSignal;
  artifacts?: ArtifactStore;
  capture?: CaptureLimits;
  stdin?: string;
  /** Variables set after filtering (a command hook's PATH without the workspace's directories). */
  extraEnv?: Readonly<Record<string, string>>;
  /**
   * Called once the process tree exists, before waiting on it (the engine journals it). If it
   * throws, the tree is killed and execute rejects with what it threw.
   */
  onSpawn?: (report: SpawnReport) => void | Promise<void>;
  /** Each stream's bytes as they arrive, scrubbed of secrets (live output); must not throw. */
  onOutput?: (stream: "stdout" | "stderr", bytes: Buffer) => void;
  /**
   * Network `policy` for this process: a proxy of its own decides and reports every connection
   * (network/proxy.ts), reached through the sandbox's bridge. Absent: no network at all.
   */
  egress?: NetworkAccess;
}

/** How a process's connections are decided and reported (see EgressProxyOptions). */
export type NetworkAccess = Pick<
  EgressProxyOptions,
  "decide" | "record" | "limits" | "parent" | "credentials"
>;

/** A long-lived process (an MCP stdio server): its pipes stay open until it is stopped. */
export interface StartRequest {
  purpose: ProcessPurpose;
  /** argv[0] is an absolute executable path (the sandbox does no PATH lookup). */
  argv: readonly string[];
  /** Absolute host path of the workspace. */
  workspace: string;
  /** Absolute host working directory, visible in the sandbox; default the workspace. */
  cwd?: string;
  /** Whether the process keeps the host's network (default: loopback only in a sandbox). */
  network?: boolean;
  /**
   * Network `policy` instead: a proxy of the service's own decides and reports every connection
   * for as long as it runs (closed once it is stopped). Takes precedence over `network`.
   */
  egress?: NetworkAccess;
  profile: ProcessProfile;
  /** Variables set after filtering (values the user configured for this process). */
  extraEnv?: Readonly<Record<string, string>>;
}

export interface StartedService {
  process: ServiceProcess;
  facts: ProcessFacts;
  sandboxed: boolean;
}

export interface ExecuteResult extends ProcessResult {
  facts: ProcessFacts;
  /** Denied programs the command tried to run: the sandbox's stubs refused them. */
  refused?: Refusal[];
  /** Absent protected names the command created: moved to `.harness/quarantine/` (absent-guard.ts). */
  quarantined?: Quarantined[];
}

/** A process started to run beside the session (`shell` with `background: true`). */
export interface BackgroundRequest
  extends Pick<
    ExecuteRequest,
    "argv" | "workspace" | "profile" | "artifacts" | "capture" | "egress" | "extraEnv"
  > {
  /** Each stream's scrubbed bytes as they arrive; must not throw. */
  onOutput: (stream: "stdout" | "stderr", bytes: Buffer) => void;
  /** Run it on a pseudo-terminal (stdout and stderr merged; the process takes typed input). */
  pty?: boolean;
}

export interface StartedBackground {
  process: BackgroundProcess;
  facts: ProcessFacts;
  sandboxed: boolean;
  /** Stop the tree, then close its egress proxy. Idempotent. */
  stop(graceMs?: number): Promise<BackgroundStop>;
}

export interface ExecutorOptions {
  /** harness's own environment: what commands' environments are filtered from. Default process.env. */
  environment?: Readonly<Record<string, string | undefined>>;
  /** Variables whose values are secrets whatever their names (e.g. the provider key variable). */
  secretNames?: readonly string[];
  /**
   * The session's one network namespace (session-network.ts), joined by every sandboxed process
   * whose purpose is in SESSION_NETWORK_PURPOSES: a server one shell call starts on loopback is
   * reachable by the later ones and by acceptance commands. Without it each process gets a fresh
   * namespace. `close()` ends it.
   */
  sessionNetwork?: SessionNetwork;
  /**
   * Variables no process receives from harness's environment, whatever passes them (`pass_env`
   * included): the credentials' names. A call with network `policy` sees their placeholders.
   */
  withheld?: readonly string[];
}

/**
 * Who shares the session's network: the model's commands and the checks of its work. Command
 * hooks (the user's gatekeepers) and MCP servers keep namespaces of their own, so nothing the model
 * starts can talk to them, nor they to it.
 */
export const SESSION_NETWORK_PURPOSES: readonly ProcessPurpose[] = ["shell", "acceptance"];

export class Executor {
  readonly environment: Readonly<Record<string, string | undefined>>;
  readonly secrets: readonly Secret[];
  readonly sessionNetwork: SessionNetwork | undefined;
  readonly #withheld: ReadonlySet<string>;

  constructor(options: ExecutorOptions = {}) {
    this.environment = options.environment ?? process.env;
    this.secrets = secretsOf(this.environment, [...(options.secretNames ?? []), ...(options.withheld ?? [])]);
    this.sessionNetwork = options.sessionNetwork;
    this.#withheld = new Set(options.withheld ?? []);
  }

  /** harness's environment as filtered for a process, less the withheld names. */
  #filtered(policy: EnvPolicy): Record<string, string> {
    const env = filterEnvironment(this.environment, policy);
    for (const name of this.#withheld) delete env[name];
    return env;
  }

  /**
   * The session is over: its network namespace ends with every process still in it (killed).
   * Returns how many were. Later processes that would join it fail with NetworkUnavailableError.
   */
  async close(): Promise<number> {
    return (await this.sessionNetwork?.close()) ?? 0;
  }

  /** The facts a process with this profile would run under (for a caller that reports before running). */
  factsFor(purpose: ProcessPurpose, profile: ProcessProfile): ProcessFacts {
    return {
      purpose,
      sandbox_profile: profile.sandbox.profile,
      env_names: Object.keys(this.#filtered(profile.env)).sort(),
    };
  }

  /**
   * The policy part of starting a process, without starting it: the sandbox is available, the
   * environment filtered, the argv wrapped, and the facts to journal known. `execute` runs the
   * result to its end; a long-lived process (an MCP stdio server) will start from the same launch
   * and keep its pipes, so every process gets the same environment and confinement.
   */
  async prepare(
    request: Pick<ExecuteRequest, "purpose" | "argv" | "workspace" | "profile"> &
      Pick<StartRequest, "cwd" | "network" | "extraEnv"> & { egressProxy?: EgressProxy },
  ): Promise<{ launch: Launch; facts: ProcessFacts }> {
    const { sandbox } = request.profile;
    await sandbox.ensureAvailable();
    const env = { ...this.#filtered(request.profile.env), ...request.extraEnv };
    const launch = await sandbox.prepare({
      argv: request.argv,
      workspace: request.workspace,
      env,
      ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
      ...(request.network === true ? { network: true } : {}),
      ...(request.egressProxy !== undefined ? { egress: egressOf(request.egressProxy) } : {}),
      ...(this.sessionNetwork !== undefined && SESSION_NETWORK_PURPOSES.includes(request.purpose)
        ? { sessionNetwork: this.sessionNetwork }
        : {}),
    });
    const facts: ProcessFacts = {
      purpose: request.purpose,
      sandbox_profile: sandbox.profile,
      env_names: Object.keys(launch.env).sort(),
    };
    return { launch, facts };
  }

  /**
   * Start a long-lived process under the same policy as `execute` and hand back its pipes; its
   * stderr is kept bounded and scrubbed of secrets. The caller owns it: `process.stop()` kills
   * the tree (and harness's exit does, should the caller not). Rejects with
   * SandboxUnavailableError or SpawnError when nothing started.
   */
  async start(request: StartRequest): Promise<StartedService> {
    const proxy = await this.#startProxy(request);
    try {
      const { egress, network, ...rest } = request;
      const { launch, facts } = await this.prepare({
        ...rest,
        ...(proxy !== undefined
          ? {
              egressProxy: proxy,
              extraEnv: { ...rest.extraEnv, ...credentialEnvironment(egress, proxy) },
            }
          : network !== undefined
            ? { network }
            : {}),
      });
      const process = await startService({
        ...launch,
        stderrFilter: secretFilter(this.secrets),
        ...(proxy !== undefined ? { afterStop: () => proxy.close() } : {}),
      });
      return { process, facts, sandboxed: request.profile.sandbox.isolating };
    } catch (error) {
      await proxy?.close();
      throw error;
    }
  }

  /**
   * Start a process that runs beside the session under the same policy as `execute`: filtered
   * environment, sandbox profile, its own egress proxy when it has network `policy` (kept until
   * it stops), output scrubbed and streamed to artifacts. The caller owns it and stops it;
   * harness's exit kills it should the caller not.
   */
  async background(request: BackgroundRequest): Promise<StartedBackground> {
    const proxy = await this.#startProxy(request);
    try {
      const { egress: _egress, pty, ...rest } = request;
      const { launch, facts } = await this.prepare({
        ...rest,
        purpose: "shell",
        ...(proxy !== undefined ? { egressProxy: proxy } : {}),
      });
      const secrets = this.secrets;
      const started = await startBackground({
        ...launch,
        outputFilter: () => secretFilter(secrets),
        onOutput: request.onOutput,
        ...(pty === true ? { pty } : {}),
        ...(request.artifacts !== undefined ? { artifacts: request.artifacts } : {}),
        ...(request.capture !== undefined ? { capture: request.capture } : {}),
      });
      let stopping: Promise<BackgroundStop> | undefined;
      return {
        process: started,
        facts,
        sandboxed: request.profile.sandbox.isolating,
        stop: (graceMs) => {
          stopping ??= started.stop(graceMs).finally(() => proxy?.close());
          return stopping;
        },
      };
    } catch (error) {
      await proxy?.close();
      throw error;
    }
  }

  /**
   * Run one process to its end. Rejects with SandboxUnavailableError (nothing ran), SpawnError
   * (nothing ran) or what onSpawn threw (the tree was killed); resolves for every outcome of a
   * process that started.
   */
  async execute(request: ExecuteRequest): Promise<ExecuteResult> {
    const proxy = await this.#startProxy(request);
    try {
      return await this.#execute(request, proxy);
    } finally {
      await proxy?.close();
    }
  }

  /**
   * The call's own proxy when it has network `policy`. Without an isolating sandbox nothing would
   * hold a process to the proxy, so that is refused; a proxy that cannot start fails the call.
   * Either way nothing runs, and never with an open network.
   */
  async #startProxy(request: Pick<ExecuteRequest, "egress" | "profile">): Promise<EgressProxy | undefined> {
    if (request.egress === undefined) return undefined;
    const { sandbox } = request.profile;
    if (!sandbox.isolating) {
      throw new NetworkUnavailableError(
        "network policy needs the sandbox: without a network namespace nothing holds a process to the proxy, so nothing would enforce the net() rules",
      );
    }
    await sandbox.ensureAvailable();
    try {
      // Loaded here: a session without network `policy` never needs the proxy (nor TLS).
      const { startEgressProxy } = await import("../network/proxy.js");
      return await startEgressProxy(request.egress);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "error";
      throw new NetworkUnavailableError(
        `the egress proxy could not start (${code}), so the command has no network`,
      );
    }
  }

  async #execute(request: ExecuteRequest, proxy: EgressProxy | undefined): Promise<ExecuteResult> {
    const { egress, ...rest } = request;
    const { launch, facts } = await this.prepare({
      ...rest,
      extraEnv: { ...rest.extraEnv, ...credentialEnvironment(egress, proxy) },
      ...(proxy !== undefined ? { egressProxy: proxy } : {}),
    });
    const { sandbox } = request.profile;
    const secrets = this.secrets;
    const options: RunProcessOptions = {
      ...launch,
      timeoutMs: request.timeoutMs,
      outputFilter: () => secretFilter(secrets),
    };
    if (request.killGraceMs !== undefined) options.killGraceMs = request.killGraceMs;
    if (request.drainMs !== undefined) options.drainMs = request.drainMs;
    if (request.signal !== undefined) options.signal = request.signal;
    if (request.artifacts !== undefined) options.artifacts = request.artifacts;
    if (request.capture !== undefined) options.capture = request.capture;
    if (request.stdin !== undefined) options.stdin = request.stdin;
    if (request.onOutput !== undefined) options.onOutput = request.onOutput;
    const onSpawn = request.onSpawn;
    if (onSpawn !== undefined) {
      options.onSpawn = (identity) => onSpawn({ ...identity, ...facts, sandboxed: sandbox.isolating });
    }
    const result = await runProcess(options);
    const refused = launch.refusals?.() ?? [];
    const quarantined = launch.quarantined?.() ?? [];
    return {
      ...result,
      facts,
      ...(refused.length > 0 ? { refused } : {}),
      ...(quarantined.length > 0 ? { quarantined } : {}),
    };
  }
}

/** A call's proxy as its sandbox needs it: the socket's directory, and where the bridge's listener goes. */
function egressOf(proxy: EgressProxy): { directory: string; adopt: (listener: Server) => void } {
  return { directory: proxy.directory, adopt: (listener) => proxy.adopt(listener) };
}

/**
 * What a call whose proxy substitutes credentials sees: each credential's placeholder under its
 * name, and the variables that make its clients trust the session CA (the bundle the proxy wrote
 * beside its socket). Nothing without a proxy or without an available credential.
 */
function credentialEnvironment(
  egress: NetworkAccess | undefined,
  proxy: EgressProxy | undefined,
): Record<string, string> {
  const credentials = egress?.credentials?.credentials;
  if (proxy === undefined || credentials === undefined || credentials.bindings.length === 0) return {};
  return { ...credentials.placeholders(), ...bundleEnvironment() };
}
