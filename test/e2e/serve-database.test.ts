import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cliEnv, runCli } from "../e2e-providers/cli.js";
import { tempPgSchema } from "../support/pg.js";
import {
  expectExit,
  fixture,
  journalFile,
  jsonSummary,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { StdioServer, serverConfig } from "./serve-support.js";

afterAll(removeTempDirs);

describe("harness serve --database URL", () => {
  it("lists, reads and verifies sessions stored in PostgreSQL; forking one there is refused with a reason", async () => {
    const env = {
      ...cliEnv(await tempDir("harness-db-home-"), {
        HARNESS_KEY_FILE: join(await tempDir("harness-db-key-"), "journal.key"),
      }),
      HARNESS_CONFIG: await serverConfig(),
    };
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const ran = await runCli(
      [
        "run",
        "--script",
        fixture("read-edit.mjs"),
        "--workspace",
        workspace,
        "--write",
        "allow",
        "--json",
        "edit",
      ],
      env,
    );
    expectExit(ran, 0);
    const session = String(jsonSummary(ran).session);
    const db = await tempPgSchema();
    const server = new StdioServer(env, ["--database", db.url]);
    try {
      const lines = (await readFile(journalFile(workspace, session), "utf8")).split("\n").slice(0, -1);
      await db.pool.query("INSERT INTO harness_sessions (session_id, next_seq) VALUES ($1, $2)", [
        session,
        lines.length,
      ]);
      for (const [seq, line] of lines.entries()) {
        await db.pool.query(
          "INSERT INTO harness_records (session_id, seq, hash, line) VALUES ($1, $2, $3, $4)",
          [session, seq, (JSON.parse(line) as { hash: string }).hash, line],
        );
      }
      const journal = await readJournal(workspace, session);
      const listed = await server.call("session/list", {});
      expect(listed.result?.sessions).toEqual([
        expect.objectContaining({
          session,
          identity: "local",
          status: "finished",
          goal: "edit",
          last_seq: journal.at(-1)?.seq,
        }),
      ]);
      const read = await server.call("session/read", { session });
      expect((read.result?.records as { hash: string }[] | undefined)?.map((r) => r.hash)).toEqual(
        journal.map((r) => r.hash),
      );
      const verify = await server.call("session/verify", { session });
      expect(verify.result).toMatchObject({
        ok: true,
        records: journal.length,
        head_hash: journal.at(-1)?.hash,
      });
      const fork = await server.call("session/fork", { session });
      expect(fork.error?.message).toContain("read-only through harness serve");
      const replayed: string[] = [];
      await server.call("session/subscribe", { session, from_seq: 0 });
      await server.waitFor((m) => m.json.method === "turn/completed");
      for (const m of server.notifications(session)) replayed.push(String(m.json.params?.hash));
      expect(replayed).toEqual(journal.map((r) => r.hash));
    } finally {
      await server.close();
      await db.cleanup();
    }
  });
});
