import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";

/**
 * The bytes of a tunnel, as cheaply as node can carry them. The download side is read straight
 * into large buffers of our own (`onread`), each handed to the client's socket as it is, with no
 * stream layer, event or copy in between; a buffer comes back for reuse once the kernel has taken
 * it, so a long download allocates a few buffers, not one per read. The upload side (requests,
 * small) is piped. Byte counts stay the sockets' own (bytesRead/bytesWritten): no code runs per
 * chunk beyond the write.
 */

/**
 * One read from the upstream takes up to this much. Node's default is 64 KiB per read; larger
 * reads mean fewer system calls and callbacks per megabyte. Measured on a 50 MB download, the
 * proxy's CPU time: ~70 ms at 64 KiB, ~46 ms at 256 KiB, ~39 ms at 1 MiB (the client's own ~30 ms).
 * A read only touches as much of the buffer as the kernel fills, so a small answer costs no more.
 */
export const RELAY_READ_BYTES = 1024 * 1024;
/**
 * Buffers kept for reuse per tunnel: reading stops while the client is behind, so one buffer is
 * being read into and one or two are being written at most.
 */
const SPARE_BUFFERS = 2;

/**
 * Connect to `address:port` for a tunnel whose downloaded bytes go to `client`. Nothing is
 * written to the client before the upstream's first read, so the caller answers the client on
 * `connect` and then calls `join`. `endClient: false`: the client is not ended when the upstream
 * ends (the caller does it on `close`).
 */
export function connectRelay(
  address: string,
  port: number,
  client: Duplex,
  options: { endClient?: boolean } = {},
): Socket {
  const spare: Uint8Array[] = [];
  const upstream: Socket = connect({
    host: address,
    port,
    // Small writes (a TLS handshake, a request) leave at once rather than after Nagle's delay.
    noDelay: true,
    onread: {
      buffer: () => spare.pop() ?? Buffer.allocUnsafeSlow(RELAY_READ_BYTES),
      callback: (length: number, buffer: Uint8Array) => {
        // The buffer is the kernel's until the write completes; then it may be read into again.
        const more = client.write(buffer.subarray(0, length), () => {
          if (spare.length < SPARE_BUFFERS) spare.push(buffer);
        });
        // The client is behind: stop reading (the kernel then slows the sender) until it drains.
        if (!more) client.once("drain", () => upstream.resume());
        return more;
      },
    },
  });
  // The upstream finished sending: so does the client, once what is queued for it is written
  // (unless the caller ends it itself: it may still have an answer of its own to give).
  if (options.endClient !== false) {
    upstream.once("end", () => {
      if (!client.writableEnded) client.end();
    });
  }
  return upstream;
}

/** Start the upload side (the client's bytes to the upstream) once the tunnel is answered. */
export function joinRelay(client: Duplex, upstream: Socket): void {
  client.pipe(upstream);
}

/**
 * One side of a tunnel closed: end the other once everything queued for it has been written,
 * then close it. Closing it at once would drop a tail still queued for a slow reader. After an
 * error (a reset), close it at once.
 */
export function closeAfterFlush(socket: Duplex, abrupt: boolean): void {
  if (abrupt || socket.destroyed || socket.writableFinished) {
    socket.destroy();
    return;
  }
  socket.once("finish", () => socket.destroy());
  if (!socket.writableEnded) socket.end();
}
