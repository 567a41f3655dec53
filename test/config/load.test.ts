import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/errors.js";
import { loadConfig, userConfigPath } from "../../src/config/load.js";
import { parseConfigText } from "../../src/config/schema.js";
import { evaluate } from "../../src/policy/evaluation.js";
import { loadShellParser } from "../../src/policy/shell-command.js";
import { policyFromConfig } from "../../src/session/governance.js";

beforeAll(loadShellParser);

let root: string;
let home: string;
let workspace: string;
const USER_LABEL = "user config (~/.config/harness/config.json)";

async function writeJson(path: string, value: unknown): Promise<void> {
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(path, typeof value === "string" ? value : JSON.stringify(value));
}
const userFile = () => join(home, ".config", "harness", "config.json");
const projectFile = () => join(workspace, "harness.config.json");
const load = (env: Record<string, string> = {}) =>
  loadConfig({ workspaceRoot: workspace, env, homedir: home });

async function expectConfigError(promise: Promise<unknown>, file: string, problem: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).file).toBe(file);
  expect((error as ConfigError).problem).toMatch(problem);
  expect((error as ConfigError).message).not.toContain(root);
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "harness-config-"));
  home = join(root, "home");
  workspace = join(root, "work", "project");
  await mkdir(home, { recursive: true });
  await mkdir(workspace, { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("loadConfig", () => {
  it("runs with no config files at all", async () => {
    const loaded = await load();
    expect(loaded.user).toBeUndefined();
    expect(loaded.project).toBeUndefined();
    expect(loaded.projectTrusted).toBe(false);
  });

  it("finds the user config through $HARNESS_CONFIG, and fails when it names a missing file", async () => {
    const custom = join(home, "custom.json");
    await writeJson(custom, { permissions: { deny: ["shell"] } });
    const loaded = await load({ HARNESS_CONFIG: custom });
    expect(loaded.user?.label).toBe("user config (~/custom.json)");
    expect(userConfigPath({}, home)).toBe(userFile());
    await expectConfigError(
      load({ HARNESS_CONFIG: join(home, "missing.json") }),
      "user config (~/missing.json)",
      /not found/,
    );
  });

  it.each([
    ["{ not json", /not valid JSON/],
    ["[]", /must be a JSON object/],
    [{ permisions: {} }, /unknown top-level key "permisions"; allowed keys: permissions, trusted_projects/],
    [{ permissions: { allow: ["grep"], allwo: [] } }, /at permissions: unknown key "allwo"/],
    [{ permissions: { allow: "grep" } }, /at permissions\.allow:/],
    [
      { permissions: { deny: ["grep", "read_file("] } },
      /invalid permission rule "read_file\(" at permissions\.deny\[1\]/,
    ],
    [{ permissions: { write: "sometimes" } }, /at permissions\.write:/],
    [{ hooks: { before_execute: [{ kind: "admit" }] } }, /exactly one of `command` or `module`/],
    [
      { hooks: { after_execute: [{ kind: "admit", command: "true" }] } },
      /admit hooks can only run before execution/,
    ],
    [{ hooks: { before_execute: [{ kind: "wrap", module: "./w.mjs" }] } }, /wrap hooks go under "execute"/],
    [{ hooks: { execute: [{ kind: "wrap", command: "true" }] } }, /must be a `module`/],
    [{ hooks: { before_run: [] } }, /at hooks: unknown key "before_run"/],
    [
      { hooks: { after_execute: [{ kind: "notify", command: "curl x", network: "yes" }] } },
      /at hooks\.after_execute\[0\]\.network:/,
    ],
    [
      { hooks: { after_execute: [{ kind: "notify", module: "./n.mjs", network: true }] } },
      /at hooks\.after_execute\[0\]\.network: only a `command` hook takes `network`/,
    ],
  ])("rejects malformed user config %j naming the file", async (content, problem) => {
    await writeJson(userFile(), content);
    await expectConfigError(load(), USER_LABEL, problem);
  });

  it("rejects a malformed project config naming harness.config.json", async () => {
    await writeJson(projectFile(), { permissions: { deny: ["bad name(x)"] } });
    await expectConfigError(
      load(),
      "project config (harness.config.json)",
      /invalid permission rule "bad name\(x\)"/,
    );
  });

  it("passes sandbox, shell, models and env through untouched", async () => {
    const other = { sandbox: { profile: "bwrap" }, shell: { timeout_ms: 1 }, models: ["a"], env: { X: "1" } };
    await writeJson(userFile(), other);
    expect((await load()).user?.config).toEqual(other);
  });
});

describe("project trust", () => {
  it("ignores an untrusted project's allow rules and honours its deny rules", async () => {
    await writeJson(projectFile(), { permissions: { allow: ["shell"], deny: ["read_file(.git/**)"] } });
    const loaded = await load();
    expect(loaded.projectTrusted).toBe(false);
    expect(loaded.notices).toEqual([expect.stringContaining("allow rules are ignored")]);
    const policy = policyFromConfig(loaded);
    expect(
      evaluate(policy, { tool: "shell", effect: "process_execution", args: { command: "ls" } }).decision,
    ).toBe("ask");
    expect(
      evaluate(policy, { tool: "read_file", effect: "read_only", args: { path: ".git/config" } }),
    ).toMatchObject({
      decision: "deny",
      source: "project config (harness.config.json)",
    });
  });

  it("trusts a project listed by its real path, even through a symlink or ~", async () => {
    const link = join(root, "link-to-project");
    await symlink(workspace, link);
    await writeJson(projectFile(), { permissions: { allow: ["shell(npm test)"] } });
    for (const entry of [workspace, link, `~/../work/project`]) {
      await writeJson(userFile(), { trusted_projects: [entry] });
      const loaded = await loadConfig({ workspaceRoot: link, env: {}, homedir: home });
      expect(loaded.projectTrusted).toBe(true);
      const policy = policyFromConfig(loaded);
      expect(
        evaluate(policy, { tool: "shell", effect: "process_execution", args: { command: "npm test" } })
          .decision,
      ).toBe("allow");
    }
  });

  it("does not let a project trust itself", async () => {
    await writeJson(projectFile(), { trusted_projects: [workspace], permissions: { allow: ["shell"] } });
    const loaded = await load();
    expect(loaded.projectTrusted).toBe(false);
    expect(loaded.notices.join("\n")).toContain("trusted_projects is ignored");
  });

  it("lets the CLI deny beat a user allow end to end", async () => {
    await writeJson(userFile(), { permissions: { allow: ["edit_file"] } });
    const policy = policyFromConfig(await load(), { deny: ["edit_file(src/**)"] });
    expect(
      evaluate(policy, { tool: "edit_file", effect: "local_write", args: { path: "src/a.ts" } }),
    ).toMatchObject({
      decision: "deny",
      source: "cli",
    });
  });
});

describe("parseConfigText", () => {
  it("accepts the documented shape", () => {
    const config = parseConfigText(
      JSON.stringify({
        permissions: {
          allow: ["read_file(src/**)"],
          ask: ["*"],
          deny: ["read_file(.env)"],
          write: "propose",
        },
        trusted_projects: ["/somewhere"],
        hooks: {
          before_execute: [{ kind: "admit", command: "./check", tools: ["edit_file"], timeout_ms: 5000 }],
          after_project: [{ kind: "notify", command: "./post", network: true }],
        },
      }),
      "x",
    );
    expect(config.permissions?.write).toBe("propose");
    expect(config.hooks?.before_execute?.[0]?.tools).toEqual(["edit_file"]);
    expect(config.hooks?.after_project?.[0]?.network).toBe(true);
  });
});

describe("the user's own config through a pipe", () => {
  it("is read as the user named it (HARNESS_CONFIG=<(...)), unlike a project config", async () => {
    const { execFileSync, spawn } = await import("node:child_process");
    const fifo = join(root, "config-pipe");
    execFileSync("mkfifo", [fifo]);
    const writer = spawn("sh", ["-c", `printf '%s' '{"permissions":{"deny":["shell"]}}' > '${fifo}'`]);
    const exited = new Promise((resolve) => writer.once("exit", resolve));
    const loaded = await load({ HARNESS_CONFIG: fifo });
    expect(loaded.user?.config.permissions?.deny).toEqual(["shell"]);
    await exited;
  });
});
