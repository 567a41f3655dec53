import { readdirSync, readlinkSync } from "node:fs";
import path from "node:path";
import { lstatOrUndefined, realOrUndefined } from "./stat.js";

/**
 * What of the host a sandboxed command can see: toolchains, not secrets. The sandbox root is an
 * empty tmpfs; only these are mounted into it (read-only), in this order:
 *
 * 1. the toolchain allow-list (TOOLCHAIN_PATHS; a top-level symlink such as /bin -> usr/bin is
 *    recreated as the same symlink),
 * 2. /etc minus the secrets in ETC_SECRETS (masked by an empty file or an empty directory),
 * 3. a private, empty, writable HOME (tmpfs at $HOME), so tools that need a home work and none of
 *    the user's home is visible,
 * 4. the read paths the USER config names (`sandbox.read_paths`: language caches and toolchains
 *    under home), with the credentials in HOME_CREDENTIALS masked again if a read path holds them.
 *
 * harness's own state and credentials are hidden after the workspace is mounted (harness-secrets.ts).
 *
 * Never mounted: /root, /home (except the workspace and read paths below them), /run, /var/run
 * (so no host Unix sockets, no $XDG_RUNTIME_DIR), /var, /srv, /mnt, /media, /sys. /tmp and /dev
 * are private and empty. The workspace is mounted after all of this (see bwrap.ts).
 */

/** Readable system directories: where compilers, interpreters and their libraries live. */
export const TOOLCHAIN_PATHS: readonly string[] = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/opt",
  "/nix",
  "/etc",
];

/** Under /etc: password hashes, sudo rules, host keys, stored network and service credentials. */
export const ETC_SECRETS: readonly string[] = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/security/opasswd",
  "/etc/ssl/private",
  "/etc/krb5.keytab",
  "/etc/credstore",
  "/etc/credstore.encrypted",
  "/etc/NetworkManager/system-connections",
  "/etc/wireguard",
  "/etc/docker/key.json",
];

/** Under any home: keys, tokens and tool credentials. Never readable, even below a read path. */
export const HOME_CREDENTIALS: readonly string[] = [
  ".ssh",
  ".aws",
  ".azure",
  ".config",
  ".docker",
  ".gnupg",
  ".kube",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".local/share/keyrings",
  ".password-store",
];

/** Directories that may never be a read path as a whole: they hold everyone's secrets or sockets. */
const NEVER_WHOLE: readonly string[] = [
  "/",
  "/root",
  "/home",
  "/run",
  "/var/run",
  "/var",
  "/tmp",
  "/proc",
  "/sys",
];
/** Directories nothing below which may be a read path: host sockets and runtime state. */
const NEVER_BELOW: readonly string[] = ["/run", "/var/run", "/proc", "/sys"];

export interface HostViewOptions {
  /** $HOME as the command will see it (a private empty directory); undefined: none. */
  home?: string | undefined;
  /** Absolute read paths from the user config (already `~`-expanded and checked). */
  readPaths?: readonly string[];
  /** Single files the user config names (hook scripts), shown read-only at their own path. */
  readFiles?: readonly string[];
  /** The real home directory of the user running harness, whose credentials are masked too. */
  realHome?: string | undefined;
}

/**
 * Why `candidate` (absolute, `~` expanded) cannot be a read path, or undefined when it can.
 * `homes`: the home directories whose credentials must stay hidden.
 */
export function readPathProblem(candidate: string, homes: readonly string[]): string | undefined {
  if (!path.isAbsolute(candidate)) return "must be absolute or start with ~/";
  const resolved = path.resolve(candidate);
  if (NEVER_WHOLE.includes(resolved) || homes.includes(resolved)) {
    return "would show a whole directory of other users' or the host's secrets; name the cache or toolchain directory itself";
  }
  if (NEVER_BELOW.some((dir) => isWithin(resolved, dir))) return "would show host sockets or runtime state";
  for (const home of homes) {
    for (const credential of HOME_CREDENTIALS) {
      if (isWithin(resolved, path.join(home, credential)))
        return `lies in ~/${credential}, which holds credentials`;
    }
  }
  return undefined;
}

/** The bwrap arguments for everything the command sees of the host (before the workspace). */
export function hostViewArguments(options: HostViewOptions): string[] {
  const args: string[] = [];
  for (const dir of TOOLCHAIN_PATHS) {
    const stats = lstatOrUndefined(dir);
    if (stats === undefined) continue;
    if (stats.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (stats.isDirectory()) args.push("--ro-bind", dir, dir);
  }
  for (const secret of ETC_SECRETS) args.push(...maskArguments(secret));
  for (const key of sshHostKeys()) args.push(...maskArguments(key));
  args.push("--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--tmpfs", "/tmp");
  const home = usableHome(options.home);
  if (home !== undefined) args.push("--tmpfs", home);
  const homes = [home, options.realHome].filter((h): h is string => h !== undefined);
  for (const readPath of options.readPaths ?? []) {
    if (readPathProblem(readPath, homes) !== undefined) continue;
    const real = realOrUndefined(readPath);
    if (real === undefined || readPathProblem(real, homes) !== undefined) continue;
    args.push("--ro-bind", real, real);
    if (real !== readPath) args.push("--ro-bind", real, readPath);
    for (const shown of new Set([real, readPath])) {
      for (const h of homes) {
        for (const credential of HOME_CREDENTIALS) {
          const hidden = path.join(h, credential);
          if (isWithin(hidden, shown) && hidden !== shown) args.push(...maskArguments(hidden));
        }
      }
    }
  }
  // Only the file itself, never its directory: a hook script in ~/.config/harness must not show
  // the journal key or anything else beside it. Anything but an existing regular file is skipped.
  for (const file of options.readFiles ?? []) {
    const real = realOrUndefined(file);
    if (real === undefined || !lstatOrUndefined(real)?.isFile()) continue;
    for (const at of new Set([real, file])) args.push("--ro-bind", real, at);
  }
  return args;
}

/** One place the sandbox shows a host directory or file: `source` on the host, mounted at `at`. */
export interface ShownRoot {
  source: string;
  at: string;
}

/**
 * What the view mounts of the host (toolchain directories, read paths, read files), each at every
 * place it is mounted (a read path given through a symlink shows at both its real path and the
 * path given): for hiding harness's secrets wherever they lie below one.
 */
export function shownRoots(options: HostViewOptions): ShownRoot[] {
  const home = usableHome(options.home);
  const homes = [home, options.realHome].filter((h): h is string => h !== undefined);
  const roots: ShownRoot[] = TOOLCHAIN_PATHS.filter(
    (dir) => lstatOrUndefined(dir)?.isDirectory() === true,
  ).map((dir) => ({ source: dir, at: dir }));
  const both = (real: string, given: string) => {
    roots.push({ source: real, at: real });
    if (given !== real) roots.push({ source: real, at: given });
  };
  for (const readPath of options.readPaths ?? []) {
    if (readPathProblem(readPath, homes) !== undefined) continue;
    const real = realOrUndefined(readPath);
    if (real === undefined || readPathProblem(real, homes) !== undefined) continue;
    both(real, readPath);
  }
  for (const file of options.readFiles ?? []) {
    const real = realOrUndefined(file);
    if (real !== undefined && lstatOrUndefined(real)?.isFile()) both(real, file);
  }
  return roots;
}

/** A home the sandbox can replace with an empty tmpfs: absolute, and not a system directory. */
export function usableHome(home: string | undefined): string | undefined {
  if (home === undefined || !path.isAbsolute(home)) return undefined;
  const resolved = path.resolve(home);
  if (resolved === "/" || TOOLCHAIN_PATHS.some((dir) => isWithin(resolved, dir))) return undefined;
  if (resolved === "/tmp" || resolved === "/dev" || resolved === "/proc") return undefined;
  return resolved;
}

/** Hide an existing file (an empty file over it) or directory (an empty read-only tmpfs). */
export function maskArguments(target: string): string[] {
  const stats = lstatOrUndefined(target);
  if (stats === undefined || stats.isSymbolicLink()) return [];
  if (stats.isDirectory()) return ["--tmpfs", target, "--remount-ro", target];
  return ["--ro-bind", "/dev/null", target];
}

/** /etc/ssh's private host keys (`ssh_host_*_key`, not the `.pub` halves). */
function sshHostKeys(): string[] {
  try {
    return readdirSync("/etc/ssh")
      .filter((name) => name.startsWith("ssh_host_") && name.endsWith("_key"))
      .map((name) => path.join("/etc/ssh", name));
  } catch {
    return [];
  }
}

export function isWithin(target: string, directory: string): boolean {
  const relative = path.relative(directory, target);
  // `..` as a whole component, not as a prefix: `..hooks/x` is inside.
  return (
    relative === "" ||
    (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
  );
}
