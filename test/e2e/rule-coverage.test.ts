// A rule covers every way to reach its subject, proven through the built CLI with a scripted
// model: compound and wrapped shell commands, symlinks to a denied file, grep and glob.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startHarnessWith } from "../e2e-shell/helpers.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "./helpers.js";

const SECRET = "TOKEN_ONLY_IN_DOTENV_4242";
/** Matches the secret without containing it: call arguments are journaled. */
const SECRET_PATTERN = "TOKEN_ONLY_IN_DOTENV_\\d+";

let config: string;
beforeAll(async () => {
  ensureBuilt();
  config = join(await tempDir("harness-user-config-"), "config.json");
  await writeFile(config, "{}");
});
afterAll(removeTempDirs);

/** The attacker's endpoint: counts every request that reaches it. */
let listener: Server;
let received: string[];
let port: number;
beforeEach(async () => {
  received = [];
  listener = createServer((request, response) => {
    received.push(request.url ?? "");
    response.end("ok");
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as AddressInfo).port;
});
afterEach(async () => {
  await new Promise<void>((resolve) => listener.close(() => resolve()));
});

type Call = { id: string; name: string; arguments: Record<string, unknown> };

/**
 * Run one scripted reply with these calls, then "done"; returns the journal and summary. A run
 * whose every call was denied ends `changes_denied` (exit 2), one where any ran `unverified`.
 */
async function runCalls(
  workspace: string,
  calls: Call[],
  flags: string[],
  ends: "unverified" | "changes_denied" = "unverified",
) {
  const script = await jsonScript([{ calls }, { text: "done" }]);
  const result = await finished(
    startHarnessWith(
      ["run", "--script", script, "--workspace", workspace, "--json", ...flags, "try to reach things"],
      { HARNESS_CONFIG: config },
    ),
  );
  expectExit(result, ends === "changes_denied" ? 2 : 0);
  const summary = jsonSummary(result);
  expect([summary.status, summary.reason]).toEqual(
    ends === "changes_denied" ? ["stopped", "changes_denied"] : ["unverified", null],
  );
  const journal = await readJournal(workspace, String(summary.session));
  const results = resultsByCall(journal);
  return { journal, results, stdout: result.stdout, stderr: result.stderr };
}

/** Every byte harness stored for the workspace's sessions (journals and artifacts). */
function storedBytes(workspace: string): string {
  const chunks: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else chunks.push(readFileSync(path, "utf8"));
    }
  };
  walk(join(workspace, ".harness"));
  return chunks.join("\n");
}

const shell = (id: string, command: string): Call => ({ id, name: "shell", arguments: { command } });

describe("shell rules decide every command a line runs", () => {
  it("npm test && curl: the allow for npm test does not carry curl; the listener receives nothing", async () => {
    const workspace = await workspaceWith({ "package.json": '{"scripts":{"test":"true"}}' });
    const url = `http://127.0.0.1:${port}/leak`;
    const { results, journal } = await runCalls(
      workspace,
      [
        shell("and", `npm test && curl -s ${url}`),
        shell("subst", `npm test $(curl -s ${url}/subst)`),
        shell("tick", `npm test \`curl -s ${url}/tick\``),
        shell("newline", `npm test\ncurl -s ${url}/newline`),
      ],
      ["--allow", "shell(npm test*)", "--shell", "deny", "--sandbox", "off"],
      "changes_denied",
    );
    for (const id of ["and", "subst", "tick", "newline"]) {
      expect(results.get(id), id).toMatchObject({ status: "denied", error_type: "POLICY_DENIED" });
      expect(String(results.get(id)?.summary), id).toContain("curl");
    }
    expect(ofType(journal, "tool.started")).toHaveLength(0);
    expect(received).toEqual([]);
  });

  it("the control: the same curl, allowed, does reach the listener", async () => {
    const workspace = await workspaceWith({});
    const { results } = await runCalls(
      workspace,
      [shell("curl", `curl -s http://127.0.0.1:${port}/allowed`)],
      ["--allow", "shell(*)", "--sandbox", "off"],
    );
    expect(results.get("curl")).toMatchObject({ status: "ok" });
    expect(received).toEqual(["/allowed"]);
  });

  it("a deny sees through quoting, spacing, wrappers and nesting under an allow-everything rule", async () => {
    const workspace = await workspaceWith({});
    const url = `http://127.0.0.1:${port}`;
    const commands = [
      `touch m1; c"ur"l -s ${url}/1`,
      `touch m2 && FOO=1   curl   -s ${url}/2`,
      `touch m3; \\curl -s ${url}/3`,
      `touch m4; env -i nohup timeout 5 curl -s ${url}/4`,
      `touch m5; sh -c 'curl -s ${url}/5'`,
      `touch m6; bash -c "true && curl -s ${url}/6"`,
      `touch m7; echo $(curl -s ${url}/7)`,
      `touch m8; (cd . && curl -s ${url}/8)`,
      `touch m9; echo ${url}/9 | xargs curl -s`,
      `touch m10; /usr/bin/curl -s ${url}/10`,
    ];
    const { results } = await runCalls(
      workspace,
      commands.map((command, index) => shell(`c${index + 1}`, command)),
      ["--allow", "shell(*)", "--deny", "shell(curl*)", "--sandbox", "off"],
      "changes_denied",
    );
    for (const [index] of commands.entries()) {
      const id = `c${index + 1}`;
      expect(results.get(id), id).toMatchObject({ status: "denied", error_type: "POLICY_DENIED" });
      // Nothing of a denied line ran, not even the allowed part before the denied one.
      expect(existsSync(join(workspace, `m${index + 1}`)), id).toBe(false);
    }
    expect(received).toEqual([]);
  });

  it("what cannot be known before it runs is asked, which denies without a terminal", async () => {
    const workspace = await workspaceWith({});
    const { results } = await runCalls(
      workspace,
      [
        shell("var", `X=curl; touch m; $X -s http://127.0.0.1:${port}/var`),
        shell("eval", `C="curl -s http://127.0.0.1:${port}/eval"; eval "$C"`),
      ],
      ["--allow", "shell(*)", "--sandbox", "off"],
      "changes_denied",
    );
    for (const id of ["var", "eval"]) {
      expect(results.get(id), id).toMatchObject({ status: "denied", error_type: "USER_DENIED" });
    }
    expect(existsSync(join(workspace, "m"))).toBe(false);
    expect(received).toEqual([]);
  });
});

describe("a path rule covers every name of its file", () => {
  it("read_file through a symlink to a denied .env is denied and its content never reaches the journal", async () => {
    const workspace = await workspaceWith({
      ".env": `API=${SECRET}\n`,
      "dir/keep.txt": "x\n",
      "plain.txt": "hi\n",
    });
    await symlink(".env", join(workspace, "link"));
    await symlink("../.env", join(workspace, "dir", "link"));
    await symlink(".", join(workspace, "cfg"));
    const read = (id: string, path: string): Call => ({ id, name: "read_file", arguments: { path } });
    const { results } = await runCalls(
      workspace,
      [
        read("link", "link"),
        read("dirlink", "dir/link"),
        read("linkdir", "cfg/.env"),
        read("plain", "plain.txt"),
      ],
      ["--deny", "read_file(.env)", "--allow", "read_file(**)"],
    );
    for (const id of ["link", "dirlink", "linkdir"]) {
      expect(results.get(id), id).toMatchObject({ status: "denied", error_type: "POLICY_DENIED" });
      expect(String(results.get(id)?.summary), id).toContain(".env");
    }
    expect(results.get("plain")).toMatchObject({ status: "ok" });
    expect(storedBytes(workspace)).not.toContain(SECRET);
  });

  it("grep for a string only in .env finds nothing, and the secret is stored nowhere", async () => {
    const workspace = await workspaceWith({ ".env": `API=${SECRET}\n`, "src/a.ts": "export const a = 1;\n" });
    await symlink(".env", join(workspace, "env-link"));
    const { results } = await runCalls(
      workspace,
      [
        { id: "secret", name: "grep", arguments: { pattern: SECRET_PATTERN } },
        { id: "code", name: "grep", arguments: { pattern: "export" } },
      ],
      [],
    );
    expect(String(results.get("secret")?.content)).toContain("(no matches)");
    expect(String(results.get("secret")?.content)).toContain("2 files not searched");
    expect(String(results.get("code")?.content)).toContain("src/a.ts:1:export const a = 1;");
    expect(storedBytes(workspace)).not.toContain(SECRET);
  });

  it("glob does not name a file a deny rule covers, but names a secret whose read asks", async () => {
    const workspace = await workspaceWith({ ".env": "A=1\n", "private/key.txt": "k\n", "src/a.ts": "x\n" });
    const { results } = await runCalls(
      workspace,
      [{ id: "list", name: "glob", arguments: { pattern: "**/*" } }],
      ["--deny", "read_file(private/**)"],
    );
    const listed = String(results.get("list")?.content).split("\n");
    expect(listed).toEqual(expect.arrayContaining([".env", "src/a.ts"]));
    expect(listed.join("\n")).not.toContain("private");
  });
});

describe("policy explain shows each part of a command", () => {
  it("names the rule and source that decided each simple command, and the file a symlink is", async () => {
    const workspace = await workspaceWith({ ".env": "A=1\n" });
    await symlink(".env", join(workspace, "link"));
    const result = await finished(
      startHarnessWith(
        [
          "policy",
          "explain",
          "shell",
          '{"command":"npm test && git   push"}',
          "--workspace",
          workspace,
          "--allow",
          "shell(npm test*)",
          "--deny",
          "shell(git push*)",
          "--json",
        ],
        { HARNESS_CONFIG: config },
      ),
    );
    expectExit(result, 0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      decision: "deny",
      rule: "shell(git push*)",
      parts: [
        { command: "npm test", decision: "allow", rule: "shell(npm test*)", source: "cli" },
        { command: "git push", decision: "deny", rule: "shell(git push*)", source: "cli" },
      ],
    });
    const text = await finished(
      startHarnessWith(
        [
          "policy",
          "explain",
          "read_file",
          '{"path":"link"}',
          "--workspace",
          workspace,
          "--deny",
          "read_file(.env)",
        ],
        { HARNESS_CONFIG: config },
      ),
    );
    expectExit(text, 0);
    expect(text.stdout).toContain("read_file: deny");
    expect(text.stdout).toContain("resolves to: .env");
  });

  it("a rule that does not parse is a usage error naming it, not an internal error", async () => {
    const workspace = await workspaceWith({});
    const result = await finished(
      startHarnessWith(
        ["policy", "explain", "shell", '{"command":"ls"}', "--workspace", workspace, "--deny", "shell(ls"],
        { HARNESS_CONFIG: config },
      ),
    );
    expectExit(result, 64);
    expect(result.stderr).toContain("shell(ls");
    expect(result.stderr).not.toContain("internal error");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
