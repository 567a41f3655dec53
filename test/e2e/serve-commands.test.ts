import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, jsonScript, ofType, readJournal, removeTempDirs, workspaceWith } from "./helpers.js";
import { StdioServer, serverConfig, serverEnv } from "./serve-support.js";

/*
 * `/NAME args` through the server: a leading `/NAME` naming a project template the user has not
 * approved is refused with a structured error (COMMAND_NOT_LOADED), never sent to the model as
 * typed; nothing is recorded for it.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("harness serve: a command template that is not loaded", () => {
  it("is refused on turn/start and on session/start's goal; an ordinary input still runs", {
    timeout: 60_000,
  }, async () => {
    const workspace = await workspaceWith({ ".agents/commands/ship.md": "Ship $1 now.\n" });
    const script = await jsonScript([{ text: "ok" }]);
    const server = new StdioServer(serverEnv(await serverConfig()));
    try {
      await server.call("initialize", { client: { name: "test", version: "1" }, protocol_version: 1 });
      const withGoal = await server.call("session/start", {
        workspace,
        goal: "/ship v2",
        options: { script },
      });
      expect(withGoal.error).toMatchObject({
        code: -32602,
        data: { code: "COMMAND_NOT_LOADED", command: "ship" },
      });
      expect(withGoal.error?.message).toContain("harness plugins approve ship");

      const started = await server.call("session/start", { workspace, options: { script } });
      const session = started.result?.session as string;
      expect(session).toBeTruthy();
      const refused = await server.call("turn/start", { session, input: "/ship v2" });
      expect(refused.error).toMatchObject({ code: -32602, data: { code: "COMMAND_NOT_LOADED" } });
      expect(refused.error?.message).toContain("not approved");

      // Not sent as typed: the session holds no input at all until an ordinary one is sent.
      expect(await readJournal(workspace, session).catch(() => [])).toEqual([]);
      await server.call("turn/start", { session, input: "hello" });
      await server.waitFor((m) => m.json.method === "turn/completed" && m.json.params?.session === session);
      const journal = await readJournal(workspace, session);
      expect(ofType(journal, "user.input").map((r) => r.data.text)).toEqual(["hello"]);
      expect(ofType(journal, "command.expanded")).toEqual([]);
    } finally {
      expect((await server.close()).code).toBe(0);
    }
  });
});
