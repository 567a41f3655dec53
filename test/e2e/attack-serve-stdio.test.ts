import { afterAll, describe, expect, it } from "vitest";
import { jsonScript, removeTempDirs, workspaceWith } from "./helpers.js";
import { StdioServer, serverConfig, serverEnv } from "./serve-support.js";

afterAll(removeTempDirs);

describe("attack: harness serve --stdio fed hostile input", () => {
  it("a 100 MB line is one error, not 100 MB held; a flood of garbage gets one parse error each; the connection goes on", async () => {
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      const stdin = server.child.stdin!;
      const chunk = "x".repeat(1024 * 1024);
      for (let i = 0; i < 100; i++) {
        if (!stdin.write(chunk)) await new Promise((resolve) => stdin.once("drain", resolve));
      }
      stdin.write("\n");
      const tooLong = await server.waitFor(
        (m) => m.json.id === null && m.json.error?.code === -32600,
        60_000,
      );
      expect(tooLong.json.error?.message).toContain("longer than");
      for (let i = 0; i < 2000; i++) server.send(`{"jsonrpc":"2.0","id":${i},"method":`);
      server.send('[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]');
      const init = await server.call("initialize", {});
      expect(init.result).toMatchObject({ identity: "local" });
      await server.waitFor((m) => m.json.error?.message.includes("batches") === true);
      const parseErrors = server.messages.filter((m) => m.json.error?.code === -32700);
      expect(parseErrors).toHaveLength(2000);
      // Every line the server wrote is one whole JSON-RPC message (StdioServer parses each).
      expect(server.messages.every((m) => m.json !== null && typeof m.json === "object")).toBe(true);
      expect(server.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await server.close();
    }
  }, 120_000);

  it("U+2028/U+2029 in a goal and in model text never reach stdout raw, and read back unchanged", async () => {
    const odd = "line\u2028sep\u2029para </script> \u0000";
    const workspace = await workspaceWith({});
    const script = await jsonScript([{ text: `echo ${odd}` }]);
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      const started = await server.call("session/start", { workspace, goal: odd, options: { script } });
      const session = started.result?.session as string;
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.session === session);
      const read = await server.call("session/read", { session });
      const records = read.result?.records as { type: string; data: Record<string, unknown> }[];
      expect(records.find((r) => r.type === "session.started")?.data.goal).toBe(odd);
      expect(JSON.stringify(records)).toContain(JSON.stringify(`echo ${odd}`).slice(1, -1));
      for (const message of server.messages) expect(message.line).not.toMatch(/[\u2028\u2029]/);
    } finally {
      await server.close();
    }
  });
});
