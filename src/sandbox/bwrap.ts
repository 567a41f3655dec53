import { type ChildProcess, execFile } from "node:child_process";
import { constants, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { access, realpath } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { parseJsonObject } from "../shared/json.js";
import { readProcStat } from "../shared/proc-stat.js";
import { traceMark } from "../shared/trace-startup.js";
import { DEFAULT_PROTECTED_PATHS, type ProtectedPaths } from "../workspace/protected.js";
import { guardAbsent, prepareGuards, type Quarantined, settleGuards } from "./absent-guard.js";
import {
  type DenialPlan,
  type DeniedProgram,
  planDenials,
  REFUSALS_PATH,
  readRefusals,
  refusalFile,
  type StubbedFile,
  stubFile,
} from "./denied-programs.js";
import {
  type BridgeMode,
  bridgedArgv,
  bridgeEnvironment,
  bridgeMounts,
  receiveListener,
} from "./egress-bridge.js";
import { secretMasks } from "./harness-secrets.js";
import { hostViewArguments, isWithin, shownRoots, usableHome } from "./host-view.js";
import { probeMemoPaths, probeRemembered, rememberProbe } from "./probe-memo.js";
import { liveNamespaceMembers, pidNamespaceOf, signalQuietly } from "./proc.js";
import { protectedMounts } from "./protected-mounts.js";
import { type Launch, type LaunchRequest, type Sandbox, SandboxUnavailableError } from "./sandbox.js";
import type { SessionNetwork } from "./session-network.js";
import { realOrUndefined } from "./stat.js";
import { type ProcessTree, processGroupTree } from "./tree.js";

const DEFAULT_BWRAP_PATH = "/usr/bin/bwrap";

/** Host directories that are private (fresh, empty) inside the sandbox, so writable there. */
const PRIVATE_DIRECTORIES: readonly string[] = ["/tmp", "/dev"];

/** The fd number bwrap reports its child pid and namespaces on (the first extra pipe). */
const INFO_FD = 3;
/**
 * The pipe the command waits on inside the sandbox before it starts. bwrap arms
 * `--die-with-parent` only after it has set up its namespaces, just before it answers on
 * --info-fd; a harness killed before that would leave bwrap, and the command, running. So the
 * command starts only once harness has read that answer and written a line here: a harness that
 * dies first closes the pipe, the gate reads end-of-file, and the sandbox exits without running
 * anything. (`--block-fd` cannot do this: bwrap goes ahead on end-of-file.)
 */
const GATE_FD = 4;
/** Run by the shell that runs every command (never stubbed by a deny rule); POSIX sh and bash alike. */
const GATE_SCRIPT = `read -r _ <&${GATE_FD} || exit 125; exec ${GATE_FD}<&-; exec "$@"`;
const PROBE_TIMEOUT_MS = 10_000;

/**
 * Isolation that does not depend on the profile. Root keeps all capabilities inside bwrap unless
 * told otherwise, and with them could remount `/` read-write: drop them all. (The host view
 * re-binds /proc/sys read-only: uid 0 may otherwise write global sysctls, kernel.core_pattern.)
 */
const ISOLATION_ARGS: readonly string[] = [
  "--unshare-net",
  "--unshare-pid",
  "--unshare-ipc",
  "--die-with-parent",
  "--new-session",
  "--cap-drop",
  "ALL",
];

export interface BwrapLayout {
  profile: "workspace-write" | "read-only";
  /** Canonical (symlink-free) absolute workspace path. */
  workspace: string;
  /** What the command sees of the host, mounted before the workspace (see host-view.ts). */
  hostView: readonly string[];
  /** The protected paths' mounts, after the workspace (see protected-mounts.ts). */
  protectedMounts: readonly string[];
  /** Stubs over the programs deny rules name, and the refusal file (see denied-programs.ts). */
  deniedMounts?: readonly string[];
  /** What hides harness's state and credentials, after everything else (see harness-secrets.ts). */
  secretMasks?: readonly string[];
  argv: readonly string[];
  /**
   * The shell that waits on GATE_FD before exec'ing `argv` (see GATE_FD); none on a terminal,
   * which passes bwrap no pipe.
   */
  gate?: string;
  /** Host working directory (visible inside); default the workspace. */
  cwd?: string;
  /** Keep the host's network (no --unshare-net); default false. */
  network?: boolean;
  /**
   * The command is started inside the session's network namespace (by nsenter in front of bwrap):
   * no --unshare-net, the namespace it is in is already private.
   */
  joinsNamespace?: boolean;
}

export interface BwrapOptions {
  /** Extra read-only host paths from the user config (absolute). */
  readPaths?: readonly string[];
  /** Single host files shown read-only (see SandboxConfig.readFiles). */
  readFiles?: readonly string[];
  /** What no command may change, beyond the fixed rules: the files the configs name. */
  protectedPaths?: ProtectedPaths;
  /** Host paths of harness's credentials and state (see SandboxConfig.harnessSecrets). */
  harnessSecrets?: readonly string[];
  /** Programs deny rules name: covered by a refusing stub (see SandboxConfig.deniedPrograms). */
  deniedPrograms?: readonly DeniedProgram[];
}

/** bwrap's arguments for a layout. Order matters: later mounts cover earlier ones. */
export function bwrapArguments(layout: BwrapLayout): string[] {
  // The host view (with the private /tmp and HOME) comes before the workspace bind: a workspace
  // under /tmp or under $HOME must stay visible.
  const args = [...layout.hostView];
  args.push(
    layout.profile === "workspace-write" ? "--bind" : "--ro-bind",
    layout.workspace,
    layout.workspace,
  );
  args.push(...layout.protectedMounts);
  args.push(...(layout.deniedMounts ?? []));
  // Last of the mounts: no read path, hook file or protected path may show harness's secrets again.
  args.push(...(layout.secretMasks ?? []));
  // The sandbox's own root (an empty tmpfs holding the mount points) is not writable either.
  args.push("--remount-ro", "/");
  args.push(
    ...ISOLATION_ARGS.filter(
      (arg) => !((layout.network === true || layout.joinsNamespace === true) && arg === "--unshare-net"),
    ),
    "--info-fd",
    String(INFO_FD),
    "--chdir",
    layout.cwd ?? layout.workspace,
    "--",
    ...(layout.gate !== undefined ? [layout.gate, "-c", GATE_SCRIPT, "harness-gate"] : []),
    ...layout.argv,
  );
  return args;
}

/**
 * bubblewrap: an empty root with read-only toolchains, private /tmp, /dev and HOME, the workspace
 * (protected paths read-only), no network, own pid namespace.
 */
export class BwrapSandbox implements Sandbox {
  readonly isolating = true;

  constructor(
    readonly profile: "workspace-write" | "read-only",
    private readonly bwrapPath: string = DEFAULT_BWRAP_PATH,
    private readonly options: BwrapOptions = {},
  ) {}

  async ensureAvailable(): Promise<void> {
    const outcome = await probeBwrap(this.bwrapPath);
    if (!outcome.ok) throw new SandboxUnavailableError(outcome.reason, outcome.detail);
  }

  async warm(sessionNetwork?: SessionNetwork): Promise<void> {
    const outcome = await probeBwrap(this.bwrapPath);
    if (outcome.ok && sessionNetwork !== undefined && (await sessionNetwork.available()))
      await sessionNetwork.prepare(this.bwrapPath);
  }

  async prepare(request: LaunchRequest): Promise<Launch> {
    const workspace = await realpath(request.workspace);
    if (this.profile === "workspace-write") {
      // Before anything is laid out: `.harness` exists (it is hidden and holds the guards), and
      // what a still running sandboxed process or a killed harness's command created at a
      // guarded name is moved away before this process can run or see it (absent-guard.ts).
      prepareGuards(workspace);
      settleGuards(workspace);
    }
    const home = usableHome(request.env.HOME);
    const view = {
      home,
      realHome: homedir(),
      readPaths: this.options.readPaths ?? [],
      readFiles: this.options.readFiles ?? [],
    };
    const hostView = hostViewArguments(view);
    // Hook scripts the user config names stay runnable even inside a hidden directory.
    const hookFiles = view.readFiles.flatMap((file) => realOrUndefined(file) ?? []);
    const masks = secretMasks({
      workspace,
      secrets: this.options.harnessSecrets ?? [],
      roots: shownRoots(view),
      keep: [workspace, ...hookFiles],
    });
    // A read-only workspace needs no pins or seals: nothing in it can change.
    const mounts =
      this.profile === "workspace-write"
        ? await protectedMounts(workspace, this.#protectedPaths())
        : { args: [], absent: [] };
    const denied = this.#denials(request, workspace);
    const refusals = denied.files.length > 0 ? refusalFile() : undefined;
    const deniedMounts: string[] = [];
    const shell = request.argv[0] as string;
    for (const file of denied.files) deniedMounts.push("--ro-bind", stubFile(file, shell), file.path);
    if (refusals !== undefined) deniedMounts.push("--bind", refusals, REFUSALS_PATH);
    // Network `policy`: the proxy's socket and the forwarder that reaches it (egress-bridge.ts).
    const egress = request.egress;
    const bridge =
      egress === undefined || request.network === true
        ? []
        : bridgeMounts(
            egress.directory,
            process.execPath,
            shownRoots(view).map((root) => root.at),
          );
    // The session's namespace, unless the command keeps the host's network. Made (or its making
    // failed, and nothing runs) before anything else is laid out for the command.
    const joined =
      request.sessionNetwork !== undefined &&
      request.network !== true &&
      (await request.sessionNetwork.available())
        ? await request.sessionNetwork.enter(this.bwrapPath)
        : undefined;
    // The bridge hands its listening socket to the proxy when the proxy can take it; on a
    // pseudo-terminal (no channel) it relays instead.
    const adopt = bridge.length > 0 ? egress?.adopt : undefined;
    const gate = gateShell(request.argv, denied.files);
    const layout = (mode: BridgeMode, gated = true) =>
      bwrapArguments({
        ...(gated && gate !== undefined ? { gate } : {}),
        profile: this.profile,
        workspace,
        hostView,
        protectedMounts: mounts.args,
        secretMasks: [...masks, ...bridge],
        deniedMounts,
        argv: bridge.length > 0 ? bridgedArgv(process.execPath, request.argv, mode) : request.argv,
        ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
        ...(request.network === true ? { network: true } : {}),
        ...(joined !== undefined ? { joinsNamespace: true } : {}),
      });
    const args = layout(adopt !== undefined ? "handoff" : "relay");
    // The host's TMPDIR may point at a directory that is not mounted here; /tmp is private and
    // writable. Without a usable home, the command gets one under the private /tmp.
    const env = {
      ...request.env,
      TMPDIR: "/tmp",
      HOME: home ?? "/tmp",
      ...(bridge.length > 0 ? bridgeEnvironment() : {}),
    };
    // nsenter execs bwrap: the same pid, the same process group, the same --info-fd.
    // Written before the process starts, so a harness killed while it runs leaves the guard behind.
    const guard = guardAbsent(workspace, mounts.absent);
    let quarantined: Quarantined[] = [];
    const file = joined !== undefined ? (joined.prefix[0] as string) : this.bwrapPath;
    const withPrefix = (bwrapArgs: string[]) =>
      joined !== undefined ? [...joined.prefix.slice(1), this.bwrapPath, ...bwrapArgs] : bwrapArgs;
    const fileArgs = withPrefix(args);
    return {
      file,
      args: fileArgs,
      cwd: request.cwd ?? workspace,
      env,
      // --info-fd, then the gate.
      extraPipes: 2,
      ...(adopt !== undefined ? { channel: (child) => receiveListener(child, adopt) } : {}),
      ...(refusals !== undefined ? { refusals: () => readRefusals(refusals) } : {}),
      quarantined: () => quarantined,
      createTree: (child) => {
        // bwrap exits after the namespace's init, whose exit waits for every process in it: no
        // process of the command is left to create anything once this runs.
        child.once("exit", () => {
          quarantined = guard.settle();
        });
        return namespaceTree(child);
      },
      onTerminal: () => {
        // A terminal passes bwrap no pipe: a shell opens fd 3 on a private file, then execs the
        // launch (same pid, so the terminal's child is still the outer bwrap).
        const directory = mkdtempSync(path.join(tmpdir(), "harness-pty-"));
        const info = path.join(directory, "info.json");
        return {
          file: "/bin/sh",
          args: [
            "-c",
            `info=$1; shift; exec "$@" ${INFO_FD}>"$info"`,
            "sh",
            info,
            file,
            ...withPrefix(layout("relay", false)),
          ],
          createTree: (pid, exited) => {
            void exited.then(() => {
              quarantined = guard.settle();
              rmSync(directory, { recursive: true, force: true });
            });
            return fileNamespaceTree(pid, info);
          },
        };
      },
    };
  }

  readonly #plans = new Map<string, DenialPlan>();

  /**
   * The files to cover for this command's PATH and shell. Toolchain directories do not change
   * while harness runs, so their plan is kept; one that searched a directory in the workspace
   * (a PATH entry such as `node_modules/.bin`), where files come and go, is made again each time.
   */
  #denials(request: LaunchRequest, workspace: string): DenialPlan {
    const denied = this.options.deniedPrograms ?? [];
    if (denied.length === 0) return { files: [], directories: [], skipped: [] };
    const cwd = request.cwd ?? workspace;
    const key = `${request.env.PATH ?? ""}\0${request.argv[0] ?? ""}\0${cwd}`;
    const kept = this.#plans.get(key);
    if (kept !== undefined) return kept;
    const plan = planDenials(denied, {
      searchPath: request.env.PATH,
      visible: [...(this.options.readPaths ?? []), workspace],
      shell: request.argv[0] ?? "/bin/sh",
      cwd,
    });
    if (!plan.directories.some((directory) => isWithin(directory, workspace))) this.#plans.set(key, plan);
    return plan;
  }

  #protectedPaths(): ProtectedPaths {
    return this.options.protectedPaths ?? DEFAULT_PROTECTED_PATHS;
  }

  async forbidsWrite(absolutePath: string, workspace: string): Promise<boolean> {
    const root = await realpath(workspace);
    const target = await canonicalize(absolutePath);
    if (isWithin(target, root)) {
      if (this.profile === "read-only") return true;
      const relative = path.relative(root, target);
      if (relative === "") return false;
      return this.#protectedPaths().protectionOf(relative.split(path.sep)) !== undefined;
    }
    return !PRIVATE_DIRECTORIES.some((directory) => isWithin(target, directory));
  }
}

type ProbeOutcome = { ok: true } | { ok: false; reason: "not_found" | "probe_failed"; detail: string };

const probes = new Map<string, Promise<ProbeOutcome>>();

/**
 * Whether bwrap at `bwrapPath` can create the namespaces a sandboxed command needs. Cached per
 * path for the life of the process: availability does not change while harness runs.
 */
function probeBwrap(bwrapPath: string): Promise<ProbeOutcome> {
  let probe = probes.get(bwrapPath);
  if (probe === undefined) {
    probe = runProbe(bwrapPath);
    probes.set(bwrapPath, probe);
  }
  return probe;
}

async function runProbe(bwrapPath: string): Promise<ProbeOutcome> {
  traceMark("bwrap probe: start");
  try {
    await access(bwrapPath, constants.X_OK);
  } catch {
    return {
      ok: false,
      reason: "not_found",
      detail: "bubblewrap (bwrap) was not found at the configured path",
    };
  }
  const memos = probeMemoPaths(bwrapPath);
  if (probeRemembered(memos)) return { ok: true };
  const outcome = await spawnProbe(bwrapPath);
  traceMark("bwrap probe: spawned and done");
  if (outcome.ok) rememberProbe(memos);
  return outcome;
}

function spawnProbe(bwrapPath: string): Promise<ProbeOutcome> {
  const args = [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    ...ISOLATION_ARGS,
    "--",
    "true",
  ];
  return new Promise((resolve) => {
    // Not through the executor: this runs bwrap itself with the fixed argument `true` (no user or
    // model input) to learn whether the executor can sandbox anything at all.
    execFile(
      bwrapPath,
      args,
      { timeout: PROBE_TIMEOUT_MS, killSignal: "SIGKILL", env: { PATH: "/usr/local/bin:/usr/bin:/bin" } },
      (error, _stdout, stderr) => {
        if (error === null) return resolve({ ok: true });
        const firstLine = String(stderr).split("\n")[0]?.trim().slice(0, 200);
        const where = insideBwrap()
          ? " (this harness runs inside another bubblewrap sandbox, such as a shell call of another harness run, where no new namespaces may be created)"
          : "";
        resolve({
          ok: false,
          reason: "probe_failed",
          detail: `bubblewrap (bwrap) is installed but cannot create a sandbox here${where}${firstLine ? `: ${firstLine}` : ""}`,
        });
      },
    );
  });
}

/**
 * Whether this process runs in a pid namespace whose init is bubblewrap: inside harness's own
 * sandbox (a harness started by a shell call), where bwrap cannot nest. Only for the message.
 */
function insideBwrap(): boolean {
  try {
    return readFileSync("/proc/1/comm", "utf8").trim() === "bwrap";
  } catch {
    return false;
  }
}

/** The canonical form of a path that may not exist yet: resolve its nearest existing ancestor. */
async function canonicalize(absolutePath: string): Promise<string> {
  let current = path.resolve(absolutePath);
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(await realpath(current), ...rest.reverse());
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return path.resolve(absolutePath);
      rest.push(path.basename(current));
      current = parent;
    }
  }
}

/** Shells whose `-c` runs the gate's script; any other program's `-c` means something else (`perl -c`, `python3 -c`). */
const GATE_SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh"]);

/**
 * The shell that runs the gate: the command's own when it is a shell command line (`SHELL -c`,
 * never covered by a stub), else /bin/sh, unless a deny rule covers that with a stub (then the
 * command runs ungated, as on a terminal).
 */
function gateShell(argv: readonly string[], stubbed: readonly StubbedFile[]): string | undefined {
  const first = argv[0];
  if (argv[1] === "-c" && first !== undefined && GATE_SHELLS.has(path.basename(first))) return first;
  const sh = realOrUndefined("/bin/sh");
  if (sh === undefined) return undefined;
  return stubbed.some((file) => file.path === sh || file.path === "/bin/sh") ? undefined : "/bin/sh";
}

/**
 * The command's processes are the members of bwrap's pid namespace, minus the namespace's init
 * (bwrap itself). bwrap reports the init's host pid and the namespace on --info-fd. Killing the
 * init makes the kernel kill every process of the namespace, `setsid` escapees included.
 */
function namespaceTree(child: ChildProcess): ProcessTree {
  const namespace = bwrapNamespace(child.pid!);
  let text = "";
  const info = child.stdio[INFO_FD] as Readable;
  info.setEncoding("utf8");
  info.on("error", () => undefined);
  const gate = child.stdio[GATE_FD] as Writable;
  gate.on("error", () => undefined);
  info.on("data", (part: string) => {
    if (namespace.known()) return;
    text += part;
    namespace.learn(text);
    // bwrap answers after arming --die-with-parent: from now on the command dies with harness.
    if (namespace.known()) gate.end("\n");
  });
  return namespace.tree;
}

/**
 * The same tree for a bwrap whose --info-fd is a file (it ran on a pseudo-terminal): the file is
 * read until it names the namespace, whenever the tree is asked.
 */
function fileNamespaceTree(outerPid: number, infoFile: string): ProcessTree {
  const namespace = bwrapNamespace(outerPid);
  const look = () => {
    if (namespace.known()) return;
    try {
      namespace.learn(readFileSync(infoFile, "utf8"));
    } catch {
      // Not written yet, or already removed after the exit.
    }
  };
  const { tree } = namespace;
  return {
    members: () => {
      look();
      return tree.members();
    },
    signal: (signal) => {
      look();
      tree.signal(signal);
    },
    kill: () => {
      look();
      tree.kill();
    },
  };
}

/** The tree of the bwrap at `outerPid`, once `learn` was given what it reported on --info-fd. */
function bwrapNamespace(outerPid: number): {
  tree: ProcessTree;
  known: () => boolean;
  learn: (text: string) => void;
} {
  let init: number | undefined;
  let namespace: string | undefined;
  const outer = processGroupTree(outerPid);
  const members = () => {
    if (namespace === undefined) return [];
    // A pid namespace's init becomes a zombie only after the kernel has killed every other
    // process in it and waited until they were all reaped: once the init is a zombie or gone,
    // nothing of the command is left, and every process's /proc entry need not be read.
    if (init !== undefined && initGone(init, namespace)) return [];
    return liveNamespaceMembers(namespace)
      .map((stat) => stat.pid)
      .filter((pid) => pid !== init);
  };
  return {
    known: () => init !== undefined,
    learn: (text) => {
      const parsed = parseInfo(text);
      if (parsed === undefined) return;
      init = parsed.childPid;
      namespace =
        parsed.pidNamespace !== undefined ? `pid:[${parsed.pidNamespace}]` : pidNamespaceOf(parsed.childPid);
    },
    tree: {
      members,
      signal: (signal) => {
        for (const pid of members()) signalQuietly(pid, signal);
      },
      kill: () => {
        // Before --info-fd was read, killing the outer bwrap is enough: --die-with-parent.
        if (init !== undefined && namespace !== undefined && pidNamespaceOf(init) === namespace) {
          signalQuietly(init, "SIGKILL");
        }
        outer.kill();
      },
    },
  };
}

/** Whether `init` is no longer a live process of `namespace` (a zombie, gone, or its pid reused). */
function initGone(init: number, namespace: string): boolean {
  if (pidNamespaceOf(init) !== namespace) return true;
  const stat = readProcStat(init);
  return stat === undefined || stat.state === "Z" || stat.state === "X";
}

function parseInfo(text: string): { childPid: number; pidNamespace?: number } | undefined {
  const record = parseJsonObject(text);
  if (record === undefined) return undefined;
  const childPid = record["child-pid"];
  const pidNamespace = record["pid-namespace"];
  if (typeof childPid !== "number" || !Number.isInteger(childPid) || childPid <= 0) return undefined;
  return typeof pidNamespace === "number" ? { childPid, pidNamespace } : { childPid };
}
