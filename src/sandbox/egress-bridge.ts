import type { ChildProcess } from "node:child_process";
import { Server } from "node:net";
import { RELAY_READ_BYTES } from "../network/relay.js";
import { CodedError } from "../shared/coded-error.js";
import { isWithin } from "./host-view.js";

/**
 * The way out of a sandbox with network `policy`. The sandbox keeps its own network namespace
 * (only loopback), so nothing inside can reach the host's network. A small forwarder, node running
 * FORWARDER, starts in front of the command, creates a listening socket on a port of its own on
 * 127.0.0.1 inside the namespace and hands it to harness over an IPC channel (`handoff`): the
 * call's proxy (network/proxy.ts) accepts the sandbox's connections on that socket itself, so a
 * download is copied once, by the proxy, not twice. On a pseudo-terminal, which can carry no
 * channel, the forwarder instead carries each connection to the proxy's socket, bound in
 * read-only (`relay`). The command runs as the forwarder's child with the proxy variables set:
 * its exit code and signal are the forwarder's, and when it ends the forwarder ends. A process
 * that ignores the variables finds no route anywhere.
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
 * How the forwarder gets connections to the proxy. `handoff`: it creates the listening socket in
 * the sandbox's namespace and hands it over an IPC channel to harness, whose proxy then accepts
 * the sandbox's connections itself, on its own event loop: no process copies the bytes in
 * between. `relay`: it accepts them and carries each to the proxy's UNIX socket (a process on a
 * pseudo-terminal, which can be given no channel).
 */
export type BridgeMode = "handoff" | "relay";

/** The message the forwarder sends with its listening socket, and harness's answer. */
export const LISTENER_MESSAGE = "harness-egress-listener";
const ACCEPTED_MESSAGE = "harness-egress-accepted";
/** How long the forwarder waits for harness to take the socket before it gives up (exit 125). */
const HANDOFF_TIMEOUT_MS = 15_000;

/**
 * The forwarder, as CommonJS for `node -e`: argv is MODE SOCKET PORT COMMAND... It starts the
 * command only once the way out is in place (or exits 125 saying why: a hand-off refused or
 * timed out means no network, never another way), with the proxy variables set to the address it
 * got, passes the termination signals on, and leaves the way the command left: the same exit
 * code, or the same signal.
 *
 * In `handoff` mode the channel is closed (by harness, then here) before the command starts: the
 * command inherits no descriptor of it and cannot speak to harness; NODE_CHANNEL_FD is gone from
 * its environment (node removes it at start-up; removed again here).
 */
const FORWARDER = `"use strict";
const net = require("node:net");
const { spawn } = require("node:child_process");
const [mode, socketPath, port, file, ...args] = process.argv.slice(1);
const fail = (why) => {
  process.stderr.write("harness: " + why + ", so the command has no network and did not run\\n");
  process.exit(125);
};
// One side closed: end the other once what is queued for it is written (a slow reader still gets
// the tail), then close it; after an error, close it at once.
const closeAfterFlush = (socket, abrupt) => {
  if (abrupt || socket.destroyed || socket.writableFinished) return void socket.destroy();
  socket.once("finish", () => socket.destroy());
  if (!socket.writableEnded) socket.end();
};
const relay = (client) => {
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
};
// In handoff mode harness accepts every connection; one this process would accept in the moment
// before it lets go of the socket is closed.
const server = net.createServer({ noDelay: true }, mode === "relay" ? relay : (client) => client.destroy());
server.on("error", (error) => {
  process.stderr.write("harness: the network bridge could not listen (" + (error.code || "error") + ")\\n");
  process.exit(125);
});
const run = (listening) => {
  const signals = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"];
  const proxy = "http://127.0.0.1:" + listening;
  const env = { ...process.env };
  delete env.NODE_CHANNEL_FD;
  delete env.NODE_CHANNEL_SERIALIZATION_MODE;
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
};
server.listen(Number(port), "127.0.0.1", () => {
  const listening = server.address().port;
  if (mode === "relay") return run(listening);
  if (mode !== "handoff" || typeof process.send !== "function") return fail("the network hand-off has no channel");
  let accepted = false;
  const timer = setTimeout(() => fail("the network hand-off timed out"), ${HANDOFF_TIMEOUT_MS});
  process.on("message", (message) => {
    if (message && message.type === ${JSON.stringify(ACCEPTED_MESSAGE)}) accepted = true;
  });
  // Harness closes the channel once it holds the socket: only then does the command start.
  process.once("disconnect", () => {
    clearTimeout(timer);
    if (!accepted) return fail("the network hand-off was refused");
    run(listening);
  });
  process.send({ type: ${JSON.stringify(LISTENER_MESSAGE)}, port: listening }, server, (error) => {
    if (error) return fail("the network hand-off failed (" + (error.code || "error") + ")");
    // The socket is harness's now (the kernel passed it with the message): this copy goes.
    server.close();
  });
});
`;

/** The argv that runs `argv` behind the forwarder in `mode`, with node at `execPath`. */
export function bridgedArgv(execPath: string, argv: readonly string[], mode: BridgeMode = "relay"): string[] {
  return [execPath, "-e", FORWARDER, "--", mode, BRIDGE_SOCKET, String(BRIDGE_PORT), ...argv];
}

/**
 * Harness's end of a `handoff` forwarder's channel: take the listening socket it sends (a TCP
 * server on 127.0.0.1 in the sandbox's namespace), give it to `adopt` (the call's proxy), say so,
 * and close the channel before the command starts. Anything else (a message without a server, a
 * server not on 127.0.0.1) closes the channel unanswered: the forwarder then fails the command
 * closed. Only the first message counts; the channel is never read again.
 */
export function receiveListener(child: ChildProcess, adopt: (listener: Server) => void): void {
  if (child.connected !== true) return;
  child.once("message", (message: unknown, handle: unknown) => {
    let ok = false;
    try {
      if (isListenerMessage(message) && handle instanceof Server) {
        const address = handle.address();
        if (typeof address === "object" && address !== null && address.address === "127.0.0.1") {
          adopt(handle);
          ok = true;
        }
      }
      if (!ok && handle instanceof Server) handle.close();
    } catch {
      ok = false;
    }
    const close = () => {
      if (child.connected) child.disconnect();
    };
    if (ok) child.send({ type: ACCEPTED_MESSAGE }, close);
    else close();
  });
  child.on("error", () => undefined);
}

function isListenerMessage(message: unknown): boolean {
  return (
    typeof message === "object" &&
    message !== null &&
    (message as { type?: unknown }).type === LISTENER_MESSAGE
  );
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
