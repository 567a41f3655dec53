import type { ChildProcess } from "node:child_process";
import type { Server } from "node:net";
import { CodedError } from "../shared/coded-error.js";
import type { ProtectedPaths } from "../workspace/protected.js";
import type { Quarantined } from "./absent-guard.js";
import type { DeniedProgram, Refusal } from "./denied-programs.js";
import type { SessionNetwork } from "./session-network.js";
import type { ProcessTree } from "./tree.js";

/**
 * The OS sandbox seam: how a command is wrapped so that it can only touch what its profile allows.
 *
 * - `workspace-write`: toolchains and /etc (minus secrets) read-only, the rest of the host hidden
 *   (host-view.ts), the workspace writable except its protected paths (protected-mounts.ts), a
 *   private /tmp and HOME, no network, a private pid namespace.
 * - `read-only`: the same, with the workspace read-only too.
 * - `none`: no isolation (the user opted out).
 */
export type SandboxProfile = "workspace-write" | "read-only" | "none";

export interface SandboxConfig {
  profile: SandboxProfile;
  /** Where bubblewrap lives. Default /usr/bin/bwrap. */
  bwrapPath?: string;
  /** Extra read-only host paths (absolute), from the user config's `sandbox.read_paths`. */
  readPaths?: readonly string[];
  /**
   * Single host files shown read-only at their own path: the hook scripts and modules the user
   * config names outside the workspace, so a sandboxed hook can run them without the sandbox
   * showing the directory around them (often ~/.config, which holds credentials).
   */
  readFiles?: readonly string[];
  /** What no command may change; default: the fixed rules without config-named files. */
  protectedPaths?: ProtectedPaths;
  /**
   * harness's own credentials and state on the host, files or directories, that no sandboxed
   * process may read wherever the sandbox would show them (inside the workspace, a toolchain
   * directory, a read path): the journal key (a command could forge journals this user trusts),
   * the server's tokens file, the user config and its directory. The composition root names them;
   * the workspace's `.harness` is hidden whatever this says (harness-secrets.ts).
   */
  harnessSecrets?: readonly string[];
  /**
   * Programs the deny rules name (`shell(curl*)` names `curl`): every file that is one of them,
   * under any name the sandbox shows, is covered by a stub that refuses and exits 126.
   */
  deniedPrograms?: readonly DeniedProgram[];
}

/** What a sandboxed process sees beyond the workspace, and what in the workspace it may not change. */
export type SandboxView = Pick<SandboxConfig, "readPaths" | "protectedPaths" | "harnessSecrets">;

export interface LaunchRequest {
  /** The command and its arguments; argv[0] is an absolute executable path. */
  argv: readonly string[];
  /** Absolute host path of the workspace: the working directory. */
  workspace: string;
  /** The already filtered environment. */
  env: Record<string, string>;
  /** Absolute host working directory; default the workspace. In a sandbox it must be visible there. */
  cwd?: string;
  /**
   * Whether the process may reach the network. Default false: a sandboxed process gets only
   * loopback. Only a long-lived process the user configured with network access (an MCP server
   * with `network: true`) asks for it.
   */
  network?: boolean;
  /**
   * Network `policy`: the host directory of this call's egress proxy socket (network/proxy.ts).
   * The namespace stays without a network; the command runs behind the bridge (egress-bridge.ts).
   * Only an isolating sandbox can honour it.
   */
  egress?: {
    directory: string;
    /**
     * Takes the listening socket the bridge makes in the namespace (its `handoff` mode): the
     * proxy then accepts the command's connections itself. Absent: the bridge relays them.
     */
    adopt?: (listener: Server) => void;
  };
  /**
   * The session's network namespace (session-network.ts): the command joins it instead of getting
   * a fresh one, so servers the session's commands start on loopback reach each other. Ignored
   * with `network: true` and by a sandbox that does not isolate.
   */
  sessionNetwork?: SessionNetwork;
}

/** A wrapped command, ready for runProcess. */
export interface Launch {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Pipes the wrapper needs after stdio (fd 3...). */
  extraPipes: number;
  /** How to find the command's processes; undefined: its process group. */
  createTree?: (child: ChildProcess) => ProcessTree;
  /**
   * The launch needs an IPC channel (the `ipc` entry after the extra pipes): called with the
   * child as soon as it is spawned, to serve its end. Not available on a pseudo-terminal, whose
   * launch (onTerminal) must not need it.
   */
  channel?: (child: ChildProcess) => void;
  /**
   * For a command on a pseudo-terminal, which can be handed no pipe beyond the terminal: the
   * launch rewritten so what the wrapper reports on fd 3 goes to a file, and how its processes are
   * found from the terminal's pid. Undefined: the launch as is, its tree the terminal's session.
   */
  onTerminal?: () => TerminalLaunch;
  /** After the command: the denied programs it tried to run (read once; see denied-programs.ts). */
  refusals?: () => Refusal[];
  /** After the command: what it created at absent protected names, moved away (absent-guard.ts). */
  quarantined?: () => Quarantined[];
}

/** A launch as a pseudo-terminal runs it (see Launch.onTerminal). */
export interface TerminalLaunch {
  file: string;
  args: string[];
  /** The tree of the process at `pid` (the terminal's child); `exited` settles once it exited. */
  createTree: (pid: number, exited: Promise<unknown>) => ProcessTree;
}

export type UnavailableReason = "not_found" | "probe_failed";

/** The profile needs an OS sandbox and none can be started here (`code` says why). Nothing was run. */
export class SandboxUnavailableError extends CodedError<UnavailableReason> {
  override readonly name = "SandboxUnavailableError";
}

export interface Sandbox {
  readonly profile: SandboxProfile;
  /** Whether commands are isolated at all (false only for `none`). */
  readonly isolating: boolean;
  /**
   * Resolve when the sandbox can start; otherwise reject with SandboxUnavailableError. The
   * answer is cached for the life of the process.
   */
  ensureAvailable(): Promise<void>;
  /**
   * Start, in the background, what this sandbox's first command will wait for (the probe, and
   * the session's network namespace when given), so that a session that will run a command does
   * not pay for them at that command. Nothing runs and nothing is recorded; a failure is not kept
   * (the command that needs it tries again and reports it). Resolves, never rejects, once done.
   */
  warm?(sessionNetwork?: SessionNetwork): Promise<void>;
  /** Wrap a command. Call ensureAvailable first: prepare does not probe. */
  prepare(request: LaunchRequest): Promise<Launch>;
  /**
   * Whether the sandbox forbids writing `absolutePath` (host path). Used to tell a refused write
   * (a sandbox violation) from an ordinary failure.
   */
  forbidsWrite(absolutePath: string, workspace: string): Promise<boolean>;
}
