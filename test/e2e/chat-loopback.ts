import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { writeReply } from "../e2e-providers/wire.js";

/**
 * A loopback Chat Completions server answering "MODEL says hi", with GET /v1/models listing
 * zeta-7b and alpha-1b (or, `listing: false`, answering it 404 as a server without a model list
 * does); keeps each request's model.
 */
export async function loopback(options: { listing?: boolean } = {}) {
  const models: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      if (req.method === "GET" && req.url === "/v1/models") {
        if (options.listing === false) {
          res.writeHead(404, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: "not found" }));
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ data: [{ id: "zeta-7b" }, { id: "alpha-1b" }] }));
        return;
      }
      const model = String((JSON.parse(body) as { model?: unknown }).model);
      models.push(model);
      const wire = writeReply("chat", {
        kind: "text",
        text: `${model} says hi`,
        usage: { input: 50, output: 5 },
      });
      res.writeHead(wire.status, wire.headers);
      res.end("body" in wire ? wire.body : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    models,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
