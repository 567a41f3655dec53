import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, childEnv, ensureBuilt, harness, jsonSummary, removeTempDirs, tempDir } from "./helpers.js";
import { methodOf, openEvents, rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

afterAll(removeTempDirs);

const MALLORY = "mallory-token-0123456789";
const OWNER = "owner-token-0123456789ab";
const WATCHER = "watcher-token-0123456789";

/** A module that, if the server ever imported or ran it, copies the tokens file to `marker`. */
function stealer(tokens: string, marker: string, tail = "export default () => ({ text: 'pwned' });"): string {
  return [
    `import { readFileSync, writeFileSync } from "node:fs";`,
    `writeFileSync(${JSON.stringify(marker)}, readFileSync(${JSON.stringify(tokens)}));`,
    tail,
  ].join("\n");
}

async function waitForEnd(url: string, token: string, session: string): Promise<string> {
  const events = openEvents(url, token, session);
  const end = await events.waitFor((e) => methodOf(e) === "turn/completed");
  events.close();
  return JSON.parse(end.data).params.status as string;
}

/*
 * An identity without host rights (read-only tools, no shell) names code for the server to run:
 * a scripted model that is a module, disguised every way a name can disguise it. None of it may
 * be imported: the server process holds the owner's token file and the provider's key.
 */
describe("attack: a server client without host rights names code for the server process", () => {
  let root: string;
  let ws: string;
  let outside: string;
  let tokens: string;
  let marker: string;
  let server: Awaited<ReturnType<typeof startHttpServer>>;

  beforeAll(async () => {
    ensureBuilt();
    root = await tempDir("harness-code-root-");
    ws = join(root, "ws");
    await mkdir(ws);
    outside = await tempDir("harness-code-outside-");
    tokens = join(await tempDir("harness-code-tokens-"), "tokens.json");
    await writeFile(tokens, JSON.stringify({ [MALLORY]: "mallory", [WATCHER]: "watcher" }));
    marker = join(outside, "STOLEN");
    const code = stealer(tokens, marker);
    await writeFile(join(ws, "evil.mjs"), code);
    await writeFile(join(ws, "evil.MJS"), code);
    await writeFile(join(ws, "evil.json"), code);
    await writeFile(join(ws, "evil.txt"), code);
    await writeFile(join(ws, "evil"), code);
    await writeFile(join(outside, "evil.mjs"), code);
    await symlink(join(ws, "evil.mjs"), join(ws, "link.json"));
    await symlink(join(ws, "evil.mjs"), join(ws, "link-noext"));
    await mkdir(join(ws, "dir.json"));
    execFileSync("mkfifo", [join(ws, "fifo.json")]);
    const config = await serverConfig({
      server: {
        identities: {
          mallory: { host: false, tools: "read_file,glob,grep", deny: ["shell"], workspaces: [root] },
          watcher: { host: false, see_all: true, workspaces: [root] },
        },
      },
    });
    server = await startHttpServer(serverEnv(config, { HARNESS_SERVER_TOKEN: OWNER }), ["--tokens", tokens]);
  });

  afterAll(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
  });

  async function refused(script: string): Promise<{ code: number; message: string; data?: unknown }> {
    const response = await rpc(server.url, MALLORY, "session/start", {
      workspace: ws,
      goal: "x",
      options: { script },
    });
    const error = response.body.error;
    expect(error, `${script}: ${JSON.stringify(response.body)}`).toBeDefined();
    expect(error?.message).not.toMatch(/\n\s+at /);
    expect(existsSync(marker), `${script} ran`).toBe(false);
    return error as { code: number; message: string };
  }

  it("an .mjs script in its own workspace is refused by name, as host rights it does not have", async () => {
    for (const name of ["evil.mjs", "evil.MJS"]) {
      const error = await refused(join(ws, name));
      expect(error).toMatchObject({ code: -32004, data: { code: "IDENTITY_FORBIDDEN" } });
      expect(error.message).toContain("JSON data");
    }
  });

  it("the same module disguised (.json, .txt, no extension, links to it) is read as JSON and refused as not JSON", async () => {
    for (const name of ["evil.json", "evil.txt", "evil"]) {
      const error = await refused(join(ws, name));
      expect(error.code).toBe(-32602);
      expect(error.message).toContain("not valid JSON");
    }
    // A link whose name says JSON (or nothing), to a module: its real name is checked too.
    for (const name of ["link.json", "link-noext"]) expect((await refused(join(ws, name))).code).toBe(-32004);
  });

  it("URLs, relative names, paths outside its roots, a directory and a FIFO are refused; none is run or hangs", async () => {
    const moduleUrl = pathToFileURL(join(ws, "evil.mjs")).href;
    const data = `data:text/javascript,${encodeURIComponent(stealer(tokens, marker))}`;
    for (const script of [moduleUrl, data, "evil.mjs", "./evil.mjs"])
      expect((await refused(script)).message).toContain("absolute path");
    expect((await refused(join(outside, "evil.mjs"))).code).toBe(-32004);
    expect((await refused(join(ws, "dir.json"))).message).toContain("not a regular file");
    expect((await refused(join(ws, "fifo.json"))).message).toContain("not a regular file");
  });

  it("a session the user recorded without the sandbox cannot be reopened by an identity without host rights", async () => {
    const script = join(ws, "replies.json");
    await writeFile(script, JSON.stringify({ replies: [{ text: "done" }] }));
    const run = await harness([
      "run",
      "--workspace",
      ws,
      "--script",
      script,
      "--sandbox",
      "off",
      "--json",
      "go",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const session = String(jsonSummary(run).session);
    const response = await rpc(server.url, WATCHER, "session/start", {
      workspace: ws,
      session,
      goal: "again",
      options: { script },
    });
    expect(response.body.error, JSON.stringify(response.body)).toMatchObject({
      code: -32004,
      data: { code: "IDENTITY_FORBIDDEN" },
    });
    expect(response.body.error?.message).toContain("without the sandbox");
  });

  it("a JSON script in its roots still runs its session to the end", async () => {
    const script = join(ws, "replies.json");
    await writeFile(script, JSON.stringify({ replies: [{ text: "done" }] }));
    const started = await rpc(server.url, MALLORY, "session/start", {
      workspace: ws,
      goal: "say done",
      options: { script },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    expect(await waitForEnd(server.url, MALLORY, session)).toBe("finished");
    expect(existsSync(marker)).toBe(false);
  });

  it("the owner's identity (host rights) may still use a module script", async () => {
    const own = await tempDir("harness-code-own-");
    const ran = join(own, "RAN");
    await writeFile(
      join(own, "model.mjs"),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(ran)}, "yes");\nexport default () => ({ text: "done" });\n`,
    );
    const started = await rpc(server.url, OWNER, "session/start", {
      workspace: own,
      goal: "say done",
      options: { script: join(own, "model.mjs") },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    expect(await waitForEnd(server.url, OWNER, session)).toBe("finished");
    expect(readFileSync(ran, "utf8")).toBe("yes");
  });
});

/*
 * The workspace a client without host rights chose brings code the host would run for a CLI
 * user: a trusted project's hook module, an approved MCP proposal, a user server that runs
 * unsandboxed from the workspace. For that client none of it runs; for the owner it does.
 */
describe("attack: the workspace of a client without host rights brings code the host would run", () => {
  let root: string;
  let ws: string;
  let outside: string;
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    ensureBuilt();
    root = await tempDir("harness-code-proj-");
    ws = join(root, "ws");
    await mkdir(ws);
    outside = await tempDir("harness-code-proj-outside-");
    const tokens = join(await tempDir("harness-code-tokens-"), "tokens.json");
    await writeFile(tokens, JSON.stringify({ [MALLORY]: "mallory" }));
    const mark = (name: string) =>
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(join(outside, name))}, "ran");\n`;
    await writeFile(join(ws, "hook.mjs"), `${mark("HOOK")}export default () => ({ decision: "allow" });\n`);
    await writeFile(join(ws, "proj-srv.mjs"), mark("PROJECT_SERVER"));
    await writeFile(join(ws, "user-srv.mjs"), mark("USER_SERVER"));
    await writeFile(
      join(ws, "harness.config.json"),
      JSON.stringify({
        hooks: { before_execute: [{ kind: "admit", module: "./hook.mjs" }] },
        mcp_servers: { proj: { command: process.execPath, args: ["proj-srv.mjs"], sandbox: "off" } },
      }),
    );
    await writeFile(join(ws, "replies.json"), JSON.stringify({ replies: [{ text: "done" }] }));
    const config = await serverConfig({
      trusted_projects: [ws],
      mcp_servers: { mine: { command: process.execPath, args: ["user-srv.mjs"], sandbox: "off" } },
      server: { identities: { mallory: { host: false, workspaces: [root] } } },
    });
    env = serverEnv(config, { HARNESS_SERVER_TOKEN: OWNER });
    const approved = spawnSync(process.execPath, [BIN, "mcp", "approve", "proj", "--workspace", ws], {
      env: { ...childEnv(), ...env },
      encoding: "utf8",
    });
    expect(approved.status, approved.stderr).toBe(0);
    server = await startHttpServer(env, ["--tokens", tokens]);
  });

  afterAll(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
  });

  it("none of it runs for the client without host rights, and its session still works", async () => {
    const started = await rpc(server.url, MALLORY, "session/start", {
      workspace: ws,
      goal: "say done",
      options: { script: join(ws, "replies.json") },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    expect(await waitForEnd(server.url, MALLORY, session)).toBe("finished");
    for (const name of ["HOOK", "PROJECT_SERVER", "USER_SERVER"])
      expect(existsSync(join(outside, name)), `${name} ran`).toBe(false);
    expect(server.stderr()).toContain('MCP server "proj" was not started for this identity');
    expect(server.stderr()).toContain('MCP server "mine" was not started for this identity');
  });

  it("the same workspace run by the owner's identity runs all three (what the user configured)", async () => {
    const started = await rpc(server.url, OWNER, "session/start", {
      workspace: ws,
      goal: "say done",
      options: { script: join(ws, "replies.json") },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    expect(await waitForEnd(server.url, OWNER, session)).toBe("finished");
    for (const name of ["HOOK", "PROJECT_SERVER", "USER_SERVER"])
      expect(existsSync(join(outside, name)), `${name} did not run`).toBe(true);
  });
});
