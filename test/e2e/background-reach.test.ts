import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A background server reached by a later shell call of the same session: the calls share the
 * session's network namespace (session-network.ts), and the server is stopped at the turn's end.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("a background server and a later shell call", () => {
  it("share the session's loopback: the call reaches the server", async () => {
    const workspace = await workspaceWith({});
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const server = `node -e "require('http').createServer((q, r) => r.end('pong')).listen(${port}, '127.0.0.1')"`;
    const client = `node -e "require('http').get('http://127.0.0.1:${port}/', (r) => r.on('data', (d) => process.stdout.write(d)))"`;
    const script = await jsonScript([
      {
        calls: [
          { id: "s1", name: "shell", arguments: { command: server, background: true, ready: { port } } },
        ],
      },
      { calls: [{ id: "s2", name: "shell", arguments: { command: client } }] },
      { text: "done" },
    ]);
    const config = join(await tempDir("harness-config-"), "config.json");
    await writeFile(config, "{}");
    const result = await finished(
      startHarness(
        ["run", "--script", script, "--workspace", workspace, "--shell", "allow", "--json", "go"],
        { env: { ...childEnv(), HARNESS_CONFIG: config } },
      ),
    );
    expectExit(result, 0);
    const journal = await readJournal(workspace, String(jsonSummary(result).session));
    const results = resultsByCall(journal);
    expect(results.get("s2")).toMatchObject({ status: "ok" });
    expect(String(results.get("s2")?.content)).toContain("pong");
    expect(ofType(journal, "process.stopped")[0]?.data).toMatchObject({ reason: "turn_end", survivors: 0 });
  }, 90_000);
});
