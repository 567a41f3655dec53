import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/errors.js";
import { HookRunner } from "../../src/policy/hooks.js";
import type { HookCallContext } from "../../src/runtime/ports.js";
import { configNamedFiles, resolveHookCommand } from "../../src/session/config-hooks.js";
import { loadGovernance } from "../../src/session/governance.js";

let root: string;
let home: string;
let workspace: string;
const input: HookCallContext = {
  session: "s",
  callId: "c1",
  tool: "edit_file",
  arguments: { path: "a.ts" },
  effect: "local_write",
};

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "harness-cfghooks-"));
  home = join(root, "home");
  workspace = join(root, "ws");
  await mkdir(join(home, ".config", "harness", "hooks"), { recursive: true });
  await mkdir(workspace, { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const userConfig = (value: unknown) =>
  writeFile(join(home, ".config", "harness", "config.json"), JSON.stringify(value));
const govern = () => loadGovernance(workspace, {}, { PATH: process.env.PATH }, { homedir: home });

describe("hooks from config", () => {
  it("loads module hooks relative to the config file and command hooks, filtered by tool", async () => {
    await writeFile(
      join(home, ".config", "harness", "hooks", "guard.mjs"),
      `export default (ctx) => ctx.arguments.path.endsWith(".ts") ? { decision: "deny", reason: "ts is frozen" } : { decision: "allow" };`,
    );
    await writeFile(
      join(home, ".config", "harness", "hooks", "timer.mjs"),
      `export default async (ctx, next) => { const value = await next(); return value; };`,
    );
    await userConfig({
      hooks: {
        before_execute: [{ kind: "admit", module: "./hooks/guard.mjs", tools: ["edit_file"] }],
        after_execute: [{ kind: "notify", command: "cat > notified.json" }],
        execute: [{ kind: "wrap", module: "hooks/timer.mjs" }],
      },
      // Command hooks are read-only by default; this one records what it was sent.
      hook_commands: { sandbox: "workspace-write" },
    });
    const { hooks } = await govern();
    expect(hooks.map((hook) => [hook.name, hook.kind])).toEqual([
      ["module:./hooks/guard.mjs", "admit"],
      ["user:after_execute[0]", "notify"],
      ["module:hooks/timer.mjs", "wrap"],
    ]);
    const runner = new HookRunner(hooks);
    expect(await runner.admit("before_execute", input)).toMatchObject({
      allowed: false,
      reason: "ts is frozen",
    });
    expect((await runner.admit("before_execute", { ...input, tool: "read_file" })).allowed).toBe(true);
    const wrapped = await runner.wrap(input, async () => "real");
    expect(wrapped).toMatchObject({ status: "ok", value: "real" });
    await runner.notify("after_execute", input);
    expect(JSON.parse(await readFile(join(workspace, "notified.json"), "utf8"))).toMatchObject({
      call_id: "c1",
    });
  });

  it("fails closed on a hook module without a default function, naming the config file", async () => {
    await writeFile(join(home, ".config", "harness", "hooks", "empty.mjs"), "export const x = 1;");
    await userConfig({ hooks: { before_execute: [{ kind: "admit", module: "./hooks/empty.mjs" }] } });
    await expect(govern()).rejects.toThrow(ConfigError);
    await expect(govern()).rejects.toThrow(
      /user config \(~\/\.config\/harness\/config\.json\): hooks\.before_execute\[0\]/,
    );
    await userConfig({ hooks: { before_execute: [{ kind: "admit", module: "./hooks/missing.mjs" }] } });
    await expect(govern()).rejects.toThrow(/could not be loaded/);
  });

  it("runs a project's hooks only when the user trusts the project", async () => {
    await writeFile(
      join(workspace, "harness.config.json"),
      JSON.stringify({ hooks: { before_execute: [{ kind: "notify", command: "touch pwned" }] } }),
    );
    const untrusted = await govern();
    expect(untrusted.hooks).toEqual([]);
    expect(untrusted.config.notices).toEqual([expect.stringContaining("hooks are ignored")]);
    await userConfig({ trusted_projects: [workspace] });
    expect((await govern()).hooks.map((hook) => hook.name)).toEqual(["project:before_execute[0]"]);
  });

  it("gives the network only to a user-config hook that asks for it, never to a project's", async () => {
    await writeFile(
      join(workspace, "harness.config.json"),
      JSON.stringify({
        hooks: { after_execute: [{ kind: "notify", name: "project-post", command: "true", network: true }] },
      }),
    );
    await userConfig({
      trusted_projects: [workspace],
      hooks: {
        after_execute: [
          { kind: "notify", name: "post", command: "true", network: true },
          { kind: "notify", name: "quiet", command: "true" },
        ],
      },
    });
    // The session's network as the setup binds it: each request says who asked, for which call.
    const asked: [string, string][] = [];
    const governance = await loadGovernance(
      workspace,
      {},
      { PATH: process.env.PATH },
      {
        homedir: home,
        hookNetwork: (callId, hook) => {
          asked.push([callId, hook]);
          return undefined;
        },
      },
    );
    expect(governance.hooks.map((hook) => hook.name)).toEqual(["post", "quiet", "project-post"]);
    expect(governance.config.notices).toEqual([
      expect.stringMatching(
        /project config .*"network" of hooks\.after_execute\[0\] is ignored .*only your user config or a plugin you approved/,
      ),
    ]);
    // Each hook runs sandboxed (read-only); only the user's hook asking for it asks for the network.
    const records = await new HookRunner(governance.hooks, { defaultTimeoutMs: 60_000 }).notify(
      "after_execute",
      input,
    );
    expect(records.map((record) => [record.hook, record.decision])).toEqual([
      ["post", "observed"],
      ["quiet", "observed"],
      ["project-post", "observed"],
    ]);
    expect(asked).toEqual([["c1", "post"]]);
  });
});

describe("hook file paths", () => {
  const configDir = () => join(home, ".config", "harness");
  const script = (marker: string) => `#!/bin/sh\ncat > /dev/null\ntouch '${marker}'\nexit 0\n`;

  it("resolves a user-config command's ./file next to the config file, not in the workspace", async () => {
    const outsideMarker = join(root, "ran-config-dir");
    const insideMarker = join(root, "ran-workspace");
    await writeFile(join(configDir(), "check.sh"), script(outsideMarker), { mode: 0o755 });
    await writeFile(join(workspace, "check.sh"), script(insideMarker), { mode: 0o755 });
    // The markers are written outside the workspace, which a sandboxed hook cannot do.
    await userConfig({
      hooks: { after_execute: [{ kind: "notify", command: "./check.sh --quiet" }] },
      hook_commands: { sandbox: "off" },
    });
    const { hooks } = await govern();
    await new HookRunner(hooks).notify("after_execute", input);
    await expect(readFile(outsideMarker)).resolves.toBeDefined();
    await expect(readFile(insideMarker)).rejects.toThrow(/ENOENT/);
  });

  it.each([
    ["an absolute command path", (ws: string) => ({ kind: "notify", command: `${ws}/check.sh` })],
    ["a relative command path", () => ({ kind: "notify", command: "sh ../../../ws/check.sh" })],
    ["a module", (ws: string) => ({ kind: "admit", module: `${ws}/guard.mjs` })],
  ])(
    "refuses a user-config hook whose file lies inside the workspace (%s), naming the config",
    async (_, entry) => {
      const marker = join(root, "ran");
      await writeFile(join(workspace, "check.sh"), script(marker), { mode: 0o755 });
      await writeFile(
        join(workspace, "guard.mjs"),
        `import { writeFileSync } from "node:fs"; writeFileSync(${JSON.stringify(marker)}, "x"); export default () => ({ decision: "allow" });`,
      );
      const point = entry(workspace).kind === "admit" ? "before_execute" : "after_execute";
      await userConfig({ hooks: { [point]: [entry(workspace)] } });
      const error = await govern().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect(String((error as Error).message)).toMatch(/user config .*lies inside the workspace/);
      await expect(readFile(marker)).rejects.toThrow(/ENOENT/);
    },
  );

  it("lists the workspace files every config names, trusted or not, for protection", async () => {
    await writeFile(
      join(workspace, "harness.config.json"),
      JSON.stringify({
        hooks: {
          before_execute: [{ kind: "admit", command: "./hooks/admit.sh" }],
          execute: [{ kind: "wrap", module: "tools/wrap.mjs" }],
          after_execute: [{ kind: "notify", command: "cat > notified.json" }],
        },
      }),
    );
    const { config } = await govern();
    expect(configNamedFiles(config, workspace)).toEqual(["hooks/admit.sh", "tools/wrap.mjs"]);
  });
});

describe("resolveHookCommand", () => {
  const source = {
    kind: "user" as const,
    label: "user config",
    path: "/cfg/harness/config.json",
    config: {},
  };
  it.each([
    ["./check.sh --fast", "'/cfg/harness/check.sh' --fast", ["/cfg/harness/check.sh"]],
    ["hooks/check.sh", "'/cfg/harness/hooks/check.sh'", ["/cfg/harness/hooks/check.sh"]],
    ["node ../lib/hook.mjs x/y", "node '/cfg/lib/hook.mjs' x/y", ["/cfg/lib/hook.mjs"]],
    ["/opt/hooks/run origin/main", "/opt/hooks/run origin/main", ["/opt/hooks/run"]],
    ["git diff origin/main", "git diff origin/main", []],
    ["cat > notified.json", "cat > notified.json", []],
  ])("%j runs as %j", (command, text, files) => {
    expect(resolveHookCommand(source, command)).toEqual({ text, files });
  });
});
