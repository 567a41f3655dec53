import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BIN, childEnv, jsonScript, readJournal, removeTempDirs, workspaceWith } from "./helpers.js";
import { StdioServer, serverConfig, serverEnv } from "./serve-support.js";

afterAll(removeTempDirs);

// The built CLI's `--session-threads` flag: sessions hosted on worker threads behave, on the wire
// and on disk, as sessions hosted in the server's own event loop.
describe("harness serve --session-threads", () => {
  it("runs two sessions on session threads: each writes its file and every record reaches the client in order", async () => {
    const server = new StdioServer(serverEnv(await serverConfig()), ["--session-threads", "2"]);
    try {
      await server.call("initialize", { client: { name: "test", version: "1" }, protocol_version: 1 });
      const started = await Promise.all(
        ["a", "b"].map(async (name) => {
          const workspace = await workspaceWith({ "notes.txt": `${name}\n` });
          const script = await jsonScript([
            {
              text: "writing",
              calls: [
                { id: "w1", name: "write_file", arguments: { path: "out.txt", content: `${name} done\n` } },
              ],
            },
            { text: "all done" },
          ]);
          const reply = await server.call("session/start", {
            workspace,
            goal: `write ${name}`,
            options: { script, write: true },
          });
          return { name, workspace, session: reply.result?.session as string };
        }),
      );
      for (const { name, workspace, session } of started) {
        expect(session).toMatch(/\S/);
        const end = await server.waitFor(
          (m) => m.json.method === "turn/completed" && m.json.params?.session === session,
        );
        expect(end.json.params).toMatchObject({ status: "finished" });
        expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe(`${name} done\n`);
        const journal = await readJournal(workspace, session);
        const seqs = server
          .notifications(session)
          .map((m) => m.json.params?.seq)
          .filter((seq): seq is number => typeof seq === "number");
        expect(seqs).toEqual(journal.map((record) => record.seq));
        expect(journal.at(-1)?.type).toBe("run.finished");
      }
    } finally {
      expect((await server.close()).code).toBe(0);
    }
  });

  it.each(["0", "65", "two"])(
    "refuses --session-threads %s with a usage error and serves nothing",
    (value) => {
      const cwd = mkdtempSync(join(tmpdir(), "harness-serve-threads-"));
      const result = spawnSync(process.execPath, [BIN, "serve", "--stdio", "--session-threads", value], {
        cwd,
        env: childEnv(),
        input: "",
        encoding: "utf8",
      });
      expect(result.status).toBe(64);
      expect(result.stderr).toContain("--session-threads takes a number of threads from 1 to 64");
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stdout).toBe("");
      expect(existsSync(join(cwd, ".harness"))).toBe(false);
    },
  );
});
