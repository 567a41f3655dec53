import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, realpath, rename, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, removeTempDirs, tempDir } from "./helpers.js";
import { methodOf, openEvents, rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

afterAll(removeTempDirs);

const MALLORY = "mallory-token-0123456789";

/** A process that flips `link` between two targets as fast as it can (each flip one atomic rename). */
function flipper(link: string, a: string, b: string): ChildProcess {
  const code = `
    const { symlinkSync, renameSync, rmSync } = require("node:fs");
    const [link, a, b] = process.argv.slice(1);
    const tmp = link + ".next";
    process.stdout.write("ready\\n");
    for (let i = 0; ; i++) {
      rmSync(tmp, { force: true });
      symlinkSync(i % 2 ? a : b, tmp);
      renameSync(tmp, link);
    }`;
  return spawn(process.execPath, ["-e", code, link, a, b], { stdio: ["ignore", "pipe", "ignore"] });
}

/*
 * What admission checked is what is used: a workspace admitted by its real path is opened at that
 * path, never at the name the client gave, so a link the client flips between a directory inside
 * its roots and one outside never puts a session (its .harness, its writes) outside.
 */
describe("attack: a workspace link flipping between inside and outside the identity's roots", () => {
  let root: string;
  let inside: string;
  let outside: string;
  let server: Awaited<ReturnType<typeof startHttpServer>>;

  beforeAll(async () => {
    ensureBuilt();
    root = await tempDir("harness-race-root-");
    inside = join(root, "in");
    await mkdir(inside);
    outside = await tempDir("harness-race-outside-");
    await writeFile(join(root, "replies.json"), JSON.stringify({ replies: [{ text: "done" }] }));
    const tokens = join(await tempDir(), "tokens.json");
    await writeFile(tokens, JSON.stringify({ [MALLORY]: "mallory" }));
    const config = await serverConfig({
      server: { identities: { mallory: { deny: ["shell"], workspaces: [root] } } },
    });
    server = await startHttpServer(serverEnv(config), ["--tokens", tokens]);
  });

  afterAll(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
  });

  it("sessions started through the flipping link are all inside; nothing is created outside", async () => {
    const link = join(root, "link");
    await symlink(inside, link);
    const flip = flipper(link, inside, outside);
    await new Promise((resolve) => flip.stdout?.once("data", resolve));
    const admitted: string[] = [];
    try {
      for (let i = 0; i < 200; i++) {
        const response = await rpc(server.url, MALLORY, "session/start", {
          workspace: link,
          options: { script: join(root, "replies.json") },
        });
        const session = response.body.result?.session;
        if (typeof session === "string") admitted.push(session);
        else expect(response.body.error?.code, JSON.stringify(response.body)).toBe(-32004);
      }
    } finally {
      flip.kill("SIGKILL");
    }
    expect(existsSync(join(outside, ".harness"))).toBe(false);
    expect(readdirSync(outside)).toEqual([]);
    // Some starts were admitted (the link pointed inside when checked), and each is where it was checked.
    expect(admitted.length).toBeGreaterThan(0);
    const listed = await rpc(server.url, MALLORY, "session/list", {});
    const sessions = listed.body.result?.sessions as { session: string; workspace: string }[];
    const real = await realpath(inside);
    for (const id of admitted) expect(sessions.find((s) => s.session === id)?.workspace).toBe(real);
  });

  it("a directory on the workspace's path swapped for a link after the session opened: the next turn is refused, nothing lands outside", async () => {
    const parent = join(root, "a");
    await mkdir(join(parent, "ws"), { recursive: true });
    const elsewhere = await tempDir("harness-race-elsewhere-");
    await mkdir(join(elsewhere, "ws"));
    const script = join(root, "writes.json");
    const write = (id: string, path: string) => ({
      calls: [{ id, name: "write_file", arguments: { path, content: "x\n" } }],
    });
    await writeFile(
      script,
      JSON.stringify({
        replies: [write("c1", "first.txt"), { text: "one" }, write("c2", "second.txt"), { text: "two" }],
      }),
    );
    const started = await rpc(server.url, MALLORY, "session/start", {
      workspace: join(parent, "ws"),
      goal: "write",
      options: { script, write: true },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    const events = openEvents(server.url, MALLORY, session);
    await events.waitFor((e) => methodOf(e) === "turn/completed");
    expect(existsSync(join(parent, "ws", "first.txt"))).toBe(true);

    await rename(parent, join(root, "a-moved"));
    await symlink(elsewhere, parent);
    const turn = await rpc(server.url, MALLORY, "turn/start", { session, input: "again" });
    // The turn is refused before it starts: checking who holds the session's writer lock opens the
    // workspace again, exactly, and that finds the link.
    expect(turn.body.error?.message, JSON.stringify(turn.body)).toContain("became a link");
    events.close();
    expect(readdirSync(join(elsewhere, "ws"))).toEqual([]);
    expect(existsSync(join(root, "a-moved", "ws", "second.txt"))).toBe(false);
  });
});
