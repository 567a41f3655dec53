// harness's own state and credentials are invisible to every process it starts in the sandbox: the
// workspace's `.harness` (every session's journal, artifacts and kept file copies), the journal
// key, the user config and the server's tokens file, wherever they lie. The file tools refuse
// these names; here a shell call, an acceptance command and a command hook try to read them, and
// what they wrote down (and what the model was sent) holds none of the secret bytes, while harness
// itself keeps journaling and verifying.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { openEvents, rpc, serverConfig, serverEnv, startHttpServer } from "../e2e/serve-support.js";
import { startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const GOAL_MARK = `goal-mark-${process.pid}-7f3a`;
const OBJECT_MARK = `object-mark-${process.pid}-91c2`;
const CONFIG_MARK = `config-mark-${process.pid}-5d08`;

/** Everything a process may try, each reader's output kept in a file of the workspace. */
function probe(readPath: string, extra = ""): string {
  return [
    "ls -la .harness",
    "cat .harness/sessions/*/events.jsonl",
    "find .harness -type f -exec cat {} +",
    "cat .harness/objects/*",
    `cat ${readPath}/journal.key`,
    `cat ${readPath}/config.json`,
    `cat ${readPath}/sdk.txt`,
    extra,
  ]
    .filter((line) => line !== "")
    .map((line) => `${line} 2>&1`)
    .join("; ");
}

/**
 * A minimal MCP stdio server (no dependencies, so it runs from the workspace in the sandbox): its
 * one tool runs $PROBE and returns what it printed.
 */
const PEEK_SERVER = `import { execSync } from "node:child_process";
import { createInterface } from "node:readline";
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\\n");
const peek = () => {
  try {
    return execSync(process.env.PROBE, { shell: "/bin/sh", encoding: "utf8" });
  } catch (error) {
    return String(error.stdout ?? error);
  }
};
createInterface({ input: process.stdin }).on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === "initialize")
    send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "peek", version: "1.0.0" } } });
  else if (method === "tools/list")
    send({ id, result: { tools: [{ name: "peek", description: "Peek.", inputSchema: { type: "object" } }] } });
  else if (method === "tools/call") send({ id, result: { content: [{ type: "text", text: peek() }] } });
  else send({ id, error: { code: -32601, message: "no such method" } });
});
`;

function fileText(path: string): string {
  return existsSync(path) ? readFileSync(path, "utf8") : "";
}

describe("a sandboxed process sees none of harness's state or credentials", { timeout: 120_000 }, () => {
  it("shell call, acceptance command and command hook: no journal, object, key or config bytes; harness still verifies", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n", "gone.txt": `${OBJECT_MARK}\n` });
    const home = await tempDir("harness-home-");
    const shown = await tempDir("harness-readpath-");
    writeFileSync(join(shown, "sdk.txt"), "visible-sdk\n");
    const keyFile = join(shown, "journal.key");
    const config = join(shown, "config.json");
    const command = probe(shown);
    writeFileSync(
      config,
      JSON.stringify({
        trusted_projects: [`/nowhere/${CONFIG_MARK}`],
        sandbox: { profile: "workspace-write", read_paths: [shown] },
        hooks: { after_execute: [{ kind: "notify", command: `{ ${command}; } > hook-out.txt` }] },
        hook_commands: { sandbox: "workspace-write" },
      }),
    );
    const env = { HARNESS_CONFIG: config, HOME: home, HARNESS_KEY_FILE: keyFile };

    // An earlier session: its goal is in its journal, gone.txt's bytes only in .harness once deleted.
    const first = await jsonScript([
      { text: "clean", calls: [{ id: "rm", name: "shell", arguments: { command: "rm gone.txt" } }] },
      { text: "done" },
    ]);
    const earlier = await finished(
      startHarnessWith(
        ["run", "--script", first, "-w", workspace, "--session", "earlier", "--shell", "allow", GOAL_MARK],
        env,
      ),
    );
    expectExit(earlier, 0);
    expect(existsSync(join(workspace, "gone.txt"))).toBe(false);
    const key = readFileSync(keyFile, "utf8").trim();
    expect(key).toMatch(/^[0-9a-f]{64}$/);

    const second = await jsonScript([
      {
        text: "look",
        calls: [
          {
            id: "look",
            name: "shell",
            arguments: { command: `{ ${command}; } > shell-out.txt; cat shell-out.txt` },
          },
        ],
      },
      { text: "done" },
    ]);
    const result = await finished(
      startHarnessWith(
        [
          "run",
          ...["--script", second, "-w", workspace, "--session", "probe", "--shell", "allow"],
          ...["--accept", `{ ${command}; } > accept-out.txt; cat accept-out.txt`],
          "look around",
        ],
        env,
      ),
    );
    expectExit(result, 0);

    const records = await readJournal(workspace, "probe");
    const [look] = ofType(records, "tool.result");
    const [checked] = ofType(records, "acceptance.checked");
    const seen = {
      shell: fileText(join(workspace, "shell-out.txt")),
      model: JSON.stringify(look?.data),
      acceptance: fileText(join(workspace, "accept-out.txt")),
      acceptanceJournaled: JSON.stringify(checked?.data),
      hook: fileText(join(workspace, "hook-out.txt")),
    };
    for (const [who, text] of Object.entries(seen)) {
      // Each reader ran and saw what it may see...
      expect(text, who).toContain("visible-sdk");
      // ...and none of harness's secrets.
      // (`earlier` is the other session's directory name: a listing of .harness would show it.)
      for (const secret of [GOAL_MARK, OBJECT_MARK, CONFIG_MARK, key, "earlier"]) {
        expect(text, `${who} shows ${secret}`).not.toContain(secret);
      }
    }
    // harness's own state is intact and its journals verify.
    for (const session of ["earlier", "probe"]) {
      const verified = await finished(startHarnessWith(["journal", "verify", session, "-w", workspace], env));
      expectExit(verified, 0);
    }
    expect(ofType(records, "run.finished")).toHaveLength(1);
  });

  it("a sandboxed MCP stdio server and a read-only shell see no more than the others", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n", "peek.mjs": PEEK_SERVER });
    const home = await tempDir("harness-home-");
    const shown = await tempDir("harness-readpath-");
    writeFileSync(join(shown, "sdk.txt"), "visible-sdk\n");
    const keyFile = join(shown, "journal.key");
    const config = join(shown, "config.json");
    writeFileSync(
      config,
      JSON.stringify({
        trusted_projects: [`/nowhere/${CONFIG_MARK}`],
        sandbox: { profile: "workspace-write", read_paths: [shown] },
        mcp_servers: {
          peek: { command: process.execPath, args: ["peek.mjs"], env: { PROBE: probe(shown) } },
        },
      }),
    );
    const env = { HARNESS_CONFIG: config, HOME: home, HARNESS_KEY_FILE: keyFile };
    const first = await jsonScript([{ text: "done" }]);
    expectExit(
      await finished(
        startHarnessWith(["run", "--script", first, "-w", workspace, "--session", "earlier", GOAL_MARK], env),
      ),
      0,
    );
    const key = readFileSync(keyFile, "utf8").trim();
    const second = await jsonScript([
      {
        text: "look",
        calls: [
          { id: "mcp", name: "mcp__peek__peek", arguments: {} },
          { id: "ro", name: "shell", arguments: { command: probe(shown) } },
        ],
      },
      { text: "done" },
    ]);
    const result = await finished(
      startHarnessWith(
        [
          "run",
          ...["--script", second, "-w", workspace, "--session", "probe", "--sandbox", "read-only"],
          ...["--shell", "allow", "--allow", "mcp__peek__*", "look"],
        ],
        env,
      ),
    );
    expectExit(result, 0);
    const results = ofType(await readJournal(workspace, "probe"), "tool.result");
    expect(results).toHaveLength(2);
    for (const call of results) {
      const text = JSON.stringify(call.data);
      expect(text, String(call.data.call_id)).toContain("visible-sdk");
      for (const secret of [GOAL_MARK, CONFIG_MARK, key, "earlier"]) {
        expect(text, `${String(call.data.call_id)} shows ${secret}`).not.toContain(secret);
      }
    }
  });

  it("a workspace inside another workspace's .harness is refused, so its journals reach no process", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const script = await jsonScript([{ text: "done" }]);
    const earlier = await finished(
      startHarnessWith(["run", "--script", script, "-w", workspace, "--session", "earlier", GOAL_MARK]),
    );
    expectExit(earlier, 0);
    const look = await jsonScript([
      {
        text: "look",
        calls: [{ id: "look", name: "shell", arguments: { command: "cat sessions/*/events.jsonl" } }],
      },
      { text: "done" },
    ]);
    for (const inside of [join(workspace, ".harness"), join(workspace, ".harness", "sessions")]) {
      const refused = await finished(
        startHarnessWith(["run", "--script", look, "-w", inside, "--shell", "allow", "--json", "look"]),
      );
      expectExit(refused, 64);
      expect(refused.stderr).toContain("inside harness's state directory");
      expect(refused.stdout).not.toContain(GOAL_MARK);
    }
  });
});

describe("the server's tokens file inside a session's workspace", { timeout: 120_000 }, () => {
  const ALICE = `alice-token-${process.pid}-0123456789`;
  const DEFAULT = "default-token-0123456789";

  it("is empty to the session's shell and acceptance command; the server still serves", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const tokens = join(workspace, "tokens.json");
    writeFileSync(tokens, JSON.stringify({ [ALICE]: "alice" }));
    mkdirSync(join(workspace, "sub"));
    const script = join(await tempDir("harness-script-"), "script.json");
    writeFileSync(
      script,
      JSON.stringify({
        replies: [
          {
            text: "look",
            calls: [
              {
                id: "look",
                name: "shell",
                arguments: { command: "cat tokens.json > shell-tokens.txt; echo read; cat tokens.json" },
              },
            ],
          },
          { text: "done" },
        ],
      }),
    );
    const config = await serverConfig({});
    const server = await startHttpServer(serverEnv(config, { HARNESS_SERVER_TOKEN: DEFAULT }), [
      "--tokens",
      tokens,
    ]);
    try {
      const started = await rpc(server.url, DEFAULT, "session/start", {
        workspace,
        goal: "look",
        options: { script, shell: true, accept: ["cat tokens.json > accept-tokens.txt; echo checked"] },
      });
      const session = started.body.result?.session as string;
      expect(session, JSON.stringify(started.body)).toBeTruthy();
      const events = openEvents(server.url, DEFAULT, session);
      await events.waitFor((event) => event.data.includes('"type":"run.finished"'), 30_000);
      events.close();
      const records = await readJournal(workspace, session);
      const [look] = ofType(records, "tool.result");
      expect(JSON.stringify(look?.data)).toContain("read");
      expect(JSON.stringify(look?.data)).not.toContain(ALICE);
      const [checked] = ofType(records, "acceptance.checked");
      expect(JSON.stringify(checked?.data)).toContain("checked");
      for (const file of ["shell-tokens.txt", "accept-tokens.txt"]) {
        expect(existsSync(join(workspace, file)), file).toBe(true);
        expect(readFileSync(join(workspace, file), "utf8"), file).not.toContain(ALICE);
      }
      // The file itself is untouched and still admits its identity.
      expect(readFileSync(tokens, "utf8")).toContain(ALICE);
      const listed = await rpc(server.url, ALICE, "session/list", { workspace });
      expect(listed.status).toBe(200);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});
