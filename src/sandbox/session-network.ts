import { spawn } from "node:child_process";
import { closeSync, constants, fstatSync, openSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { access } from "node:fs/promises";
import type { Readable } from "node:stream";
import { parseJsonObject } from "../shared/json.js";
import { traceMark } from "../shared/trace-startup.js";
import { NetworkUnavailableError } from "./egress-bridge.js";
import { signalQuietly } from "./proc.js";

/**
 * One network namespace for a whole session, so that a server a command starts on loopback is
 * reachable by the session's later commands and by nothing else (not the host, not another
 * session).
 *
 * bwrap 0.8 cannot join an existing network namespace, so a sandboxed command is started as
 * `nsenter --net=NS -- bwrap ...` (bwrap without `--unshare-net`); everything else (its own pid,
 * ipc and mount namespaces, `--die-with-parent`, the dropped capabilities) stays per command.
 *
 * The namespace is created once, at the session's first sandboxed command, by a short-lived
 * holder: bwrap with `--unshare-net` (which also brings up `lo`) running `sh` that says it is
 * ready and waits. harness then opens the holder's `/proc/PID/ns/net` (and, when bwrap made a user
 * namespace for it, `ns/user`) and lets the holder go. The open descriptors keep the namespace
 * alive; nothing else does. So the namespace cannot be lost mid-session (there is no holder
 * process to die, and no pid whose reuse could point elsewhere), and `nsenter` names it through
 * `/proc/HARNESS/fd/N`: a descriptor the kernel confirmed is a network namespace that is not the
 * host's. `close()` kills whatever still runs in it and closes the descriptors; the kernel frees
 * it with the last process.
 */

const HOLDER_TIMEOUT_MS = 10_000;
/** How long close waits for the killed processes to be gone. */
const CLOSE_WAIT_MS = 2_000;
const DEFAULT_NSENTER_PATH = "/usr/bin/nsenter";
/** The fd bwrap reports the holder's pid on. */
const INFO_FD = 3;

export interface SessionNetworkOptions {
  /** util-linux nsenter. Default /usr/bin/nsenter. */
  nsenterPath?: string;
}

/** How a command enters the session's namespace: the argv to put in front of bwrap. */
export interface NamespaceEntry {
  /** `[nsenter, --user=…, --preserve-credentials, --net=…, --]`, then bwrap and its arguments. */
  prefix: string[];
  /** The namespace, as the kernel names it: `net:[4026532177]`. */
  namespace: string;
}

interface Held {
  net: number;
  user?: number;
  namespace: string;
}

export class SessionNetwork {
  readonly #nsenterPath: string;
  #held: Promise<Held> | undefined;
  /** The making `prepare` started, if any: a command that waited for it and saw it fail tries again. */
  #prepared: Promise<Held> | undefined;
  #closed = false;

  constructor(options: SessionNetworkOptions = {}) {
    this.#nsenterPath = options.nsenterPath ?? DEFAULT_NSENTER_PATH;
  }

  /**
   * Whether commands can join a session namespace here at all (nsenter is installed). Without it
   * each command keeps a fresh namespace of its own: still no route out, only not shared.
   */
  async available(): Promise<boolean> {
    try {
      await access(this.#nsenterPath, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Start making the namespace now, in the background, for a session that will run a sandboxed
   * command (`enter` then waits for this making). A failure is forgotten at once, so the first
   * `enter` after it tries again from nothing and reports its own outcome. Never rejects.
   */
  async prepare(bwrapPath: string): Promise<void> {
    if (this.#closed || this.#held !== undefined) return;
    const making = createNamespace(bwrapPath);
    this.#held = making;
    this.#prepared = making;
    await making.then(
      () => undefined,
      () => {
        if (this.#held === making) this.#held = undefined;
      },
    );
  }

  /**
   * The entry to the namespace, creating it at the first call (with bwrap at `bwrapPath`).
   * Rejects with NetworkUnavailableError when it cannot be made or the session has ended: the
   * command must not run then, and never on the host's network.
   */
  async enter(bwrapPath: string): Promise<NamespaceEntry> {
    if (this.#closed)
      throw new NetworkUnavailableError("the session has ended: its network namespace is gone");
    let held: Held | undefined;
    while (held === undefined) {
      const making = this.#held ?? createNamespace(bwrapPath);
      this.#held = making;
      try {
        held = await making;
      } catch (error) {
        // A failed creation is not kept: the next command tries again, from nothing. One made in
        // the background before this command asked is not this command's attempt: it makes its own.
        if (this.#held === making) this.#held = undefined;
        if (making !== this.#prepared || this.#closed) throw error;
        this.#prepared = undefined;
      }
    }
    if (this.#closed)
      throw new NetworkUnavailableError("the session has ended: its network namespace is gone");
    const fd = (n: number) => `/proc/${process.pid}/fd/${n}`;
    const prefix = [this.#nsenterPath];
    // Joining a namespace another user namespace owns needs that user namespace first; the
    // credentials stay this process's (bwrap then makes its own user namespace inside, as always).
    if (held.user !== undefined) prefix.push(`--user=${fd(held.user)}`, "--preserve-credentials");
    prefix.push(`--net=${fd(held.net)}`, "--");
    return { prefix, namespace: held.namespace };
  }

  /** The namespace's kernel name once it exists (`net:[…]`), for tests and reports. */
  async namespace(): Promise<string | undefined> {
    return this.#held === undefined ? undefined : (await this.#held.catch(() => undefined))?.namespace;
  }

  /**
   * End the namespace: every process still in it is killed (SIGKILL: the session is over) and the
   * descriptors are closed, so the kernel frees it. Later `enter` calls fail. Returns how many
   * processes were killed. Idempotent.
   */
  async close(): Promise<number> {
    if (this.#closed) return 0;
    this.#closed = true;
    const held = await this.#held?.catch(() => undefined);
    if (held === undefined) return 0;
    const members = processesIn(held.namespace);
    for (const pid of members) signalQuietly(pid, "SIGKILL");
    // SIGKILL is not instant: a dying process is still listed for a moment. Resolve once none is,
    // so "ended" means no process is left in it (bounded: a process stuck in the kernel stays).
    const deadline = Date.now() + CLOSE_WAIT_MS;
    while (processesIn(held.namespace).length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    closeSync(held.net);
    if (held.user !== undefined) closeSync(held.user);
    return members.length;
  }
}

/** Live pids whose network namespace is `namespace` (`net:[…]`). */
export function processesIn(namespace: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue;
    try {
      if (readlinkSync(`/proc/${pid}/ns/net`) === namespace) pids.push(pid);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}

/**
 * Start the holder, open its namespaces, let it go. The holder sees the host read-only and has no
 * capabilities; it only has to exist until its namespace is opened.
 */
async function createNamespace(bwrapPath: string): Promise<Held> {
  traceMark("session network: creating");
  const holder = spawn(
    bwrapPath,
    [
      // No --dev or --proc: unprivileged, those make bwrap nest a second user namespace, and the
      // holder's user namespace must be the one that owns its network namespace.
      "--ro-bind",
      "/",
      "/",
      "--unshare-net",
      "--die-with-parent",
      "--cap-drop",
      "ALL",
      "--info-fd",
      String(INFO_FD),
      "--",
      "/bin/sh",
      "-c",
      "echo ready; read _",
    ],
    {
      // Fixed arguments, no model or user input, like the sandbox probe: not through the executor.
      env: { PATH: "/usr/local/bin:/usr/bin:/bin" },
      stdio: ["pipe", "pipe", "pipe", "pipe"],
    },
  );
  let stderr = "";
  holder.stderr?.setEncoding("utf8");
  holder.stderr?.on("data", (part: string) => {
    stderr = (stderr + part).slice(0, 400);
  });
  holder.stdin?.on("error", () => undefined);
  const exited = new Promise<void>((resolve) => holder.once("close", () => resolve()));
  try {
    const info = await readInfo(holder.stdio[INFO_FD] as Readable, holder.stdout as Readable, exited);
    traceMark("session network: holder ready");
    return openNamespace(info);
  } catch (error) {
    const detail = stderr.split("\n")[0]?.trim();
    throw new NetworkUnavailableError(
      `the session's network namespace could not be created (${(error as Error).message}${detail ? `: ${detail}` : ""}); nothing ran`,
    );
  } finally {
    holder.stdin?.end();
    const timer = setTimeout(() => holder.kill("SIGKILL"), 1_000);
    await exited;
    clearTimeout(timer);
  }
}

/** The holder's pid once its command runs (so `lo` is up), from --info-fd and its "ready". */
function readInfo(info: Readable, stdout: Readable, exited: Promise<void>): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = "";
    let pid: number | undefined;
    let ready = false;
    const settle = () => {
      if (pid !== undefined && ready) {
        clearTimeout(timer);
        resolve(pid);
      }
    };
    const timer = setTimeout(() => reject(new Error("the holder did not start in time")), HOLDER_TIMEOUT_MS);
    info.setEncoding("utf8");
    info.on("data", (part: string) => {
      text += part;
      const childPid = parseJsonObject(text)?.["child-pid"];
      if (typeof childPid === "number" && Number.isInteger(childPid) && childPid > 0) {
        pid = childPid;
        settle();
      }
    });
    info.on("error", () => undefined);
    stdout.setEncoding("utf8");
    stdout.on("data", (part: string) => {
      if (part.includes("ready")) {
        ready = true;
        settle();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error("the holder exited before it was ready"));
    });
  });
}

/**
 * Open the holder's namespaces and check what was opened: a network namespace other than this
 * process's own. Whatever else it is (the holder gone and its pid reused), nothing is kept.
 */
function openNamespace(pid: number): Held {
  const host = statSync("/proc/self/ns/net");
  const net = openSync(`/proc/${pid}/ns/net`, "r");
  try {
    const opened = fstatSync(net);
    // The holder is still running (it waits on its stdin), so the pid is still the holder's.
    if (opened.dev !== host.dev || opened.ino === host.ino) {
      throw new Error("the holder's network namespace is the host's");
    }
    const namespace = `net:[${opened.ino}]`;
    const ownUser = statSync("/proc/self/ns/user").ino;
    const userPath = `/proc/${pid}/ns/user`;
    if (statSync(userPath).ino === ownUser) return { net, namespace };
    const user = openSync(userPath, "r");
    return { net, user, namespace };
  } catch (error) {
    closeSync(net);
    throw error;
  }
}
