import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { StdioServer, serverConfig, serverEnv } from "./serve-support.js";

/*
 * `harness serve`'s session/start takes the run command's agent limits (agents_depth,
 * agents_concurrent, agents_max): recorded with the session and held by its delegation, checked
 * through the real server over stdio.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

describe("harness serve session/start with agent limits", () => {
  it("records agents_depth / agents_max and holds the session to them: a grandchild may run, a second child is refused", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const file = join(await tempDir("harness-agents-serve-"), "script.json");
    await writeFile(
      file,
      JSON.stringify({
        replies: [
          {
            text: "",
            calls: [
              call("a1", "agent", { task: "t", label: "one" }),
              call("a2", "agent", { task: "t", label: "two" }),
            ],
          },
          { text: "ok" },
        ],
        agents: {
          one: {
            replies: [
              { text: "", calls: [call("b1", "agent", { task: "deeper", label: "sub" })] },
              { text: "done" },
            ],
            agents: { sub: { replies: [{ text: "sub done" }] } },
          },
        },
      }),
    );
    const server = new StdioServer(
      serverEnv(await serverConfig(), { HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") }),
    );
    try {
      await server.call("initialize", { client: { name: "test", version: "1" }, protocol_version: 1 });
      // Out of bounds: refused by the method's schema, nothing started.
      const refused = await server.call("session/start", {
        workspace,
        goal: "delegate",
        options: { script: file, agents_depth: 9 },
      });
      expect(refused.error, JSON.stringify(refused)).toBeDefined();
      expect(JSON.stringify(refused.error)).toContain("agents_depth");

      const started = await server.call("session/start", {
        workspace,
        goal: "delegate",
        options: { script: file, write: true, agents_depth: 2, agents_concurrent: 1, agents_max: 1 },
      });
      const session = started.result?.session as string;
      expect(session, JSON.stringify(started)).toBeTruthy();
      await server.waitFor(
        (m) => m.json.method === "turn/completed" && m.json.params?.session === session,
        60_000,
      );
      const parent = await readJournal(workspace, session);
      const options = ofType(parent, "session.started")[0]!.data.options as { agents?: unknown };
      expect(options.agents).toEqual({ depth: 2, concurrent: 1, max: 1 });
      // agents_max 1: the second call of the reply is refused, in call order.
      const results = resultsByCall(parent);
      expect(results.get("a1")).toMatchObject({ status: "ok" });
      expect(results.get("a2")).toMatchObject({ error_type: "AGENT_LIMIT" });
      expect(String(results.get("a2")?.content)).toContain("--agents-max is 1");
      // agents_depth 2: the child may delegate once more (the default, 1, would refuse it).
      const child = await readJournal(workspace, `${session}/one`);
      expect(ofType(child, "agent.started").map((r) => r.data.child_session)).toEqual([`${session}/one/sub`]);
      expect(resultsByCall(child).get("b1")).toMatchObject({ status: "ok" });
      const grandchild = await readJournal(workspace, `${session}/one/sub`);
      expect(ofType(grandchild, "run.finished").map((r) => r.data.answer)).toEqual(["sub done"]);
    } finally {
      await server.close();
    }
  }, 90_000);
});
