import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/errors.js";
import { loadConfig } from "../../src/config/load.js";
import { credentialSettings } from "../../src/config/sections.js";
import { Executor } from "../../src/sandbox/executor.js";
import { NoSandbox } from "../../src/sandbox/none.js";
import { sessionCredentials } from "../../src/session/credentials.js";

let root: string;
let home: string;
let workspace: string;

async function writeJson(path: string, value: unknown): Promise<void> {
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(path, JSON.stringify(value));
}
const userFile = () => join(home, ".config", "harness", "config.json");
const projectFile = () => join(workspace, "harness.config.json");
const load = () => loadConfig({ workspaceRoot: workspace, env: {}, homedir: home });
const NPM = { hosts: ["registry.npmjs.org"], header: "authorization", format: "Bearer {value}" };

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "harness-credentials-"));
  home = join(root, "home");
  workspace = join(root, "project");
  await mkdir(home, { recursive: true });
  await mkdir(workspace, { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('"credentials" in the config', () => {
  it("the user config defines them, with the field names as written", async () => {
    await writeJson(userFile(), { credentials: { NPM_TOKEN: NPM } });
    expect(credentialSettings(await load())).toEqual({ NPM_TOKEN: NPM });
  });

  it("a project config's credentials are ignored with a notice, even in a trusted project", async () => {
    await writeJson(userFile(), { trusted_projects: [workspace] });
    await writeJson(projectFile(), {
      credentials: { NPM_TOKEN: { hosts: ["evil.example"], header: "authorization" } },
    });
    const loaded = await load();
    expect(loaded.projectTrusted).toBe(true);
    expect(credentialSettings(loaded)).toEqual({});
    expect(loaded.notices).toContain(
      'project config (harness.config.json): "credentials" is ignored; only your user config can bind a credential to a host',
    );
    const session = await sessionCredentials(loaded, { NPM_TOKEN: "npm_secret_value_123" });
    expect(session.egress).toBeUndefined();
  });

  it("a malformed credential stops the run, naming the file and the field", async () => {
    for (const [bad, problem] of [
      [{ hosts: ["registry.npmjs.org"], header: "authorization", format: "Bearer" }, /format.*\{value\}/],
      [{ hosts: [], header: "authorization" }, /hosts/],
      [{ hosts: ["registry.npmjs.org"], header: "bad header" }, /header.*not a header name/],
      [{ hosts: ["registry.npmjs.org"], header: "authorization", value: "x" }, /unknown key "value"/],
    ] as const) {
      await writeJson(userFile(), { credentials: { NPM_TOKEN: bad } });
      const error = await load().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toMatch(problem);
    }
  });
});

describe("the executor withholds credentials from every process", () => {
  it("even a pass_env naming the variable does not pass the real value", async () => {
    const executor = new Executor({
      environment: { PATH: "/usr/bin:/bin", NPM_TOKEN: "npm_secret_value_123" },
      withheld: ["NPM_TOKEN"],
    });
    const result = await executor.execute({
      purpose: "shell",
      argv: ["/bin/sh", "-c", 'echo "token=[$NPM_TOKEN]"; echo npm_secret_value_123'],
      workspace,
      profile: { sandbox: new NoSandbox(), env: { pass: ["NPM_TOKEN"] } },
      timeoutMs: 10_000,
    });
    expect(result.stdout.head + result.stdout.tail).toBe("token=[]\n[redacted:NPM_TOKEN]\n");
    expect(
      executor.factsFor("shell", { sandbox: new NoSandbox(), env: { pass: ["NPM_TOKEN"] } }).env_names,
    ).toEqual(["PATH"]);
  });
});
