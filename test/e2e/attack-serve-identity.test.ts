import { existsSync } from "node:fs";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harness, removeTempDirs, tempDir } from "./helpers.js";
import { methodOf, openEvents, rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

afterAll(removeTempDirs);

const MALLORY = "mallory-token-0123456789";
const DEFAULT = "default-token-0123456789";

/*
 * A token holder that is not the user: what it can make the HOST do (outside the sandbox and
 * the permission policy) through session/start's options, and where it can make a session write.
 */
describe("attack: an HTTP identity asks the host for more than its sessions' tools", () => {
  let root: string;
  let outside: string;
  let tokens: string;
  let server: Awaited<ReturnType<typeof startHttpServer>>;

  beforeAll(async () => {
    root = await tempDir("harness-attack-root-");
    outside = await tempDir("harness-attack-outside-");
    await mkdir(join(root, "ws"));
    // A link inside the root that leads out of it.
    await symlink(outside, join(root, "escape"));
    const dir = await tempDir();
    tokens = join(dir, "tokens.json");
    await writeFile(tokens, JSON.stringify({ [MALLORY]: "mallory", "nobody-token-0123456789": "nobody" }));
    const config = await serverConfig({
      server: { identities: { mallory: { deny: ["shell"], workspaces: [root] } } },
    });
    server = await startHttpServer(serverEnv(config, { HARNESS_SERVER_TOKEN: DEFAULT }), [
      "--tokens",
      tokens,
    ]);
  });

  afterAll(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
  });

  async function forbidden(params: Record<string, unknown>, token = MALLORY): Promise<string> {
    const response = await rpc(server.url, token, "session/start", params);
    expect(response.body.error, JSON.stringify(response.body)).toMatchObject({
      code: -32004,
      data: { code: "IDENTITY_FORBIDDEN" },
    });
    return response.body.error?.message ?? "";
  }

  it("acceptance commands (run on the host, unsandboxed) are refused, even in an allowed workspace: nothing runs", async () => {
    const pwned = join(outside, "PWNED");
    const message = await forbidden({
      workspace: join(root, "ws"),
      goal: "x",
      options: { accept: [`touch ${pwned}`] },
    });
    expect(message).toContain('"host": true');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(pwned)).toBe(false);
    // Refused before the workspace was opened: no session was created.
    expect(existsSync(join(root, "ws", ".harness"))).toBe(false);
  });

  it("a provider base_url (the host would send the API key there) is refused; the URL is never contacted", async () => {
    let contacted = 0;
    const listener = createServer((_req, res) => {
      contacted += 1;
      res.end();
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    try {
      const base_url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/v1`;
      await forbidden({
        workspace: join(root, "ws"),
        goal: "x",
        options: { provider: "openai-compatible", model: "m", base_url },
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(contacted).toBe(0);
    } finally {
      listener.close();
    }
  });

  it("the sandbox turned off or a key variable named (the host would run or send them) is refused before anything is created", async () => {
    const off = await forbidden({ workspace: join(root, "ws"), goal: "x", options: { sandbox: "off" } });
    expect(off).toContain('options.sandbox "off"');
    const key = await forbidden({ workspace: join(root, "ws"), goal: "x", options: { api_key_env: "HOME" } });
    expect(key).toContain("options.api_key_env");
    expect(existsSync(join(root, "ws", ".harness"))).toBe(false);
  });

  it("workspaces outside its roots are refused: /etc, the parent of a root, a symlink out of a root; nothing is created there", async () => {
    await forbidden({ workspace: "/etc", goal: "x" });
    await forbidden({ workspace: outside, goal: "x" });
    await forbidden({ workspace: join(root, ".."), goal: "x" });
    await forbidden({ workspace: join(root, "escape"), goal: "x" });
    expect(existsSync(join(outside, ".harness"))).toBe(false);
    const listed = await rpc(server.url, MALLORY, "session/list", { workspace: outside });
    expect(listed.body.error?.code).toBe(-32004);
    expect(existsSync(join(outside, ".harness"))).toBe(false);
  });

  it("a scripted-model file outside its roots is not read", async () => {
    const message = await forbidden({
      workspace: join(root, "ws"),
      goal: "x",
      options: { script: "/etc/passwd" },
    });
    expect(message).toContain("options.script");
    expect(message).not.toContain("root:");
  });

  it("an identity with no workspace roots may start nothing, anywhere", async () => {
    await forbidden({ workspace: join(root, "ws"), goal: "x" }, "nobody-token-0123456789");
    const listed = await rpc(server.url, "nobody-token-0123456789", "session/list", {
      workspace: join(root, "ws"),
    });
    expect(listed.body.error?.code).toBe(-32004);
  });

  it("inside its roots the identity works: a session runs to the end with a script kept there", async () => {
    const script = join(root, "script.json");
    await writeFile(script, JSON.stringify({ replies: [{ text: "done" }] }));
    const started = await rpc(server.url, MALLORY, "session/start", {
      workspace: join(root, "ws"),
      goal: "say done",
      options: { script },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    const events = openEvents(server.url, MALLORY, session);
    const end = await events.waitFor((e) => methodOf(e) === "turn/completed");
    events.close();
    expect(JSON.parse(end.data).params.status).toBe("finished");
  });

  it("the user's own token (HARNESS_SERVER_TOKEN, identity default) may still run acceptance commands", async () => {
    const ws = await tempDir("harness-attack-default-");
    const script = join(ws, "..", `script-${Date.now()}.json`);
    await writeFile(script, JSON.stringify({ replies: [{ text: "done" }] }));
    const started = await rpc(server.url, DEFAULT, "session/start", {
      workspace: ws,
      goal: "say done",
      options: { script, accept: ["touch accepted.txt"] },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    const events = openEvents(server.url, DEFAULT, session);
    await events.waitFor((e) => methodOf(e) === "turn/completed");
    events.close();
    expect(existsSync(join(ws, "accepted.txt"))).toBe(true);
  });
});

describe("attack: a --tokens file names an identity that would see the user's own sessions", () => {
  it.each(["local", "default"])("identity %s is refused at start, with what to do", async (name) => {
    const dir = await tempDir();
    const tokens = join(dir, "tokens.json");
    await writeFile(tokens, JSON.stringify({ "some-token-0123456789": name }));
    const result = await harness(["serve", "--http", "127.0.0.1:0", "--tokens", tokens]);
    expect(result.code).toBe(64); // usage error
    expect(result.stderr).toContain("reserved");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
