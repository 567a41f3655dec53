import { RELAY_READ_BYTES } from "../network/relay.js";
import { CodedError } from "../shared/coded-error.js";
import { isWithin } from "./host-view.js";

/**
 * The way out of a sandbox with network `policy`. The sandbox keeps its own network namespace
 * (only loopback), so nothing inside can reach the host's network; the call's proxy socket
 * (network/proxy.ts) is bound in read-only, and a small forwarder, node running FORWARDER,
 * listens on a port of its own on 127.0.0.1 inside the namespace and carries each connection to that
 * socket, its downloads read in large buffers as the proxy's are (network/relay.ts). The command
 * runs as the forwarder's child with the proxy variables set: its exit code
 * and signal are the forwarder's, and when it ends the forwarder ends. A process that ignores the
 * variables finds no route anywhere.
 */

/** Where the proxy's directory appears inside the sandbox. */
export const BRIDGE_DIRECTORY = "/run/harness-egress";
export const BRIDGE_SOCKET = `${BRIDGE_DIRECTORY}/proxy.sock`;
/**
 * The forwarder listens on a port the kernel picks in the namespace: several calls of a session
 * share one namespace (session-network.ts), so each call's forwarder needs a port of its own, and
 * a connection to it is still one of that call's (its proxy, its records).
 */
export const BRIDGE_PORT = 0;

/** The variables every common client reads for its proxy: the forwarder sets them to its address. */
export const PROXY_VARIABLES: readonly string[] = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "http_proxy",
  "https_proxy",
  "ALL_PROXY",
  "all_proxy",
  "npm_config_proxy",
  "npm_config_https_proxy",
];
/** The CA bundle (system CAs and the session CA, public parts) in the proxy's directory. */
export const BRIDGE_CA_BUNDLE = `${BRIDGE_DIRECTORY}/ca-bundle.pem`;

/** The network of a call could not be set up: nothing ran, and nothing falls back to open. */
export class NetworkUnavailableError extends CodedError<"network_unavailable"> {
  override readonly name = "NetworkUnavailableError";
  constructor(message: string) {
    super("network_unavailable", message);
  }
}

/**
 * The proxy variables as the command's environment lists them before the forwarder knows its
 * port: empty (an empty proxy is no proxy, so nothing gets out should the forwarder not set them),
 * and the loopback exemption, which the forwarder keeps.
 */
export function bridgeEnvironment(): Record<string, string> {
  return {
    ...Object.fromEntries(PROXY_VARIABLES.map((name) => [name, ""])),
    NO_PROXY: "localhost,127.0.0.1",
    no_proxy: "localhost,127.0.0.1",
  };
}

/**
 * The variables that make common clients trust the bundle at BRIDGE_CA_BUNDLE (OpenSSL, curl,
 * node, Python requests and pip, git): set for a call whose proxy terminates TLS for the hosts
 * credentials are bound to.
 */
export function bundleEnvironment(): Record<string, string> {
  return {
    SSL_CERT_FILE: BRIDGE_CA_BUNDLE,
    NODE_EXTRA_CA_CERTS: BRIDGE_CA_BUNDLE,
    REQUESTS_CA_BUNDLE: BRIDGE_CA_BUNDLE,
    CURL_CA_BUNDLE: BRIDGE_CA_BUNDLE,
    GIT_SSL_CAINFO: BRIDGE_CA_BUNDLE,
  };
}

/**
 * The forwarder, as CommonJS for `node -e`: argv is SOCKET PORT COMMAND... It starts the command
 * only once it listens (or exits 125 saying why), with the proxy variables set to the address it
 * got, passes the termination signals on, and leaves the way the command left: the same exit
 * code, or the same signal.
 */
const FORWARDER = `"use strict";
const net = require("node:net");
const { spawn } = require("node:child_process");
const [socketPath, port, file, ...args] = process.argv.slice(1);
// One side closed: end the other once what is queued for it is written (a slow reader still gets
// the tail), then close it; after an error, close it at once.
const closeAfterFlush = (socket, abrupt) => {
  if (abrupt || socket.destroyed || socket.writableFinished) return void socket.destroy();
  socket.once("finish", () => socket.destroy());
  if (!socket.writableEnded) socket.end();
};
const server = net.createServer({ noDelay: true }, (client) => {
  // Downloads are read from the proxy's socket into large buffers of our own and written to the
  // client as they are (no stream layer per chunk); a buffer is reused once the kernel took it.
  const spare = [];
  const upstream = net.connect({
    path: socketPath,
    onread: {
      buffer: () => spare.pop() || Buffer.allocUnsafeSlow(${RELAY_READ_BYTES}),
      callback: (length, buffer) => {
        const more = client.write(buffer.subarray(0, length), () => { if (spare.length < 2) spare.push(buffer); });
        if (!more) client.once("drain", () => upstream.resume());
        return more;
      },
    },
  });
  client.on("error", () => undefined);
  upstream.on("error", () => undefined);
  upstream.once("end", () => { if (!client.writableEnded) client.end(); });
  client.on("close", (hadError) => closeAfterFlush(upstream, hadError));
  upstream.on("close", (hadError) => closeAfterFlush(client, hadError));
  client.pipe(upstream);
});
server.on("error", (error) => {
  process.stderr.write("harness: the network bridge could not listen (" + (error.code || "error") + ")\\n");
  process.exit(125);
});
server.listen(Number(port), "127.0.0.1", () => {
  const signals = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"];
  const proxy = "http://127.0.0.1:" + server.address().port;
  const env = { ...process.env };
  for (const name of ${JSON.stringify(PROXY_VARIABLES)}) env[name] = proxy;
  const child = spawn(file, args, { stdio: "inherit", env });
  for (const signal of signals) process.on(signal, () => { try { child.kill(signal); } catch {} });
  child.on("error", (error) => {
    process.stderr.write("harness: " + file + ": " + (error.code || "could not start") + "\\n");
    process.exit(error.code === "ENOENT" ? 127 : 126);
  });
  child.on("exit", (code, signal) => {
    server.close();
    if (signal) {
      for (const name of signals) process.removeAllListeners(name);
      process.kill(process.pid, signal);
      setTimeout(() => process.exit(128 + (require("node:os").constants.signals[signal] || 0)), 100);
    } else {
      process.exit(code === null ? 1 : code);
    }
  });
});
`;

/** The argv that runs `argv` behind the forwarder, with node at `execPath`. */
export function bridgedArgv(execPath: string, argv: readonly string[]): string[] {
  return [execPath, "-e", FORWARDER, "--", BRIDGE_SOCKET, String(BRIDGE_PORT), ...argv];
}

/**
 * bwrap's mounts for the bridge: the proxy's directory read-only (a client may connect to a
 * socket on a read-only mount, but not replace it), and node itself where the host view does not
 * already show it.
 */
export function bridgeMounts(proxyDirectory: string, execPath: string, shown: readonly string[]): string[] {
  const mounts = ["--ro-bind", proxyDirectory, BRIDGE_DIRECTORY];
  if (!shown.some((root) => isWithin(execPath, root))) mounts.push("--ro-bind", execPath, execPath);
  return mounts;
}
