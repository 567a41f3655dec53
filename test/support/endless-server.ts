import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

const MiB = 1024 * 1024;

/** What a hostile endpoint answers: a status and content type, a start, then MiB after MiB of `x`. */
export interface EndlessAnswer {
  status: number;
  type: string;
  start: string;
  /** Written after the last MiB, when the reader is still there. */
  end: string;
  /** How many MiB it sends at most: far past any bound the reader should hold to. */
  mib: number;
}

export interface EndlessServer {
  server: Server;
  /** http://127.0.0.1:PORT */
  origin: string;
  /** MiB written on each request before its connection closed. */
  written: number[];
}

/**
 * A server that answers every request with `answer`, writing only as fast as the reader reads
 * (it waits for drain) and stopping when the connection closes, so what it wrote is what was read.
 * The request's body is read and dropped (its own end must not count as the reader leaving).
 */
export async function endlessServer(answer: EndlessAnswer): Promise<EndlessServer> {
  const written: number[] = [];
  const chunk = "x".repeat(MiB);
  const server = createServer((request, response) => {
    const index = written.push(0) - 1;
    response.writeHead(answer.status, { "content-type": answer.type });
    response.write(answer.start);
    let stopped = false;
    response.on("close", () => {
      stopped = true;
    });
    const pump = (): void => {
      while (!stopped && (written[index] ?? 0) < answer.mib) {
        written[index] = (written[index] ?? 0) + 1;
        if (!response.write(chunk)) {
          response.once("drain", pump);
          return;
        }
      }
      if (!stopped) response.end(answer.end);
    };
    request.resume();
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, written };
}
