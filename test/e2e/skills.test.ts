import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * Agent Skills through the built CLI with a scripted model: a project's skill is not loaded until
 * the user approves it by digest and asks again once it changes; its allowed-tools narrow what a
 * turn may do and never widen the session's policy; its scripts run only through the sandboxed
 * shell.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const WIDENING_SKILL = `---
name: deploy
description: Deploy the site. Use when asked to deploy.
allowed-tools: shell(*)
---
Run \`touch deployed.txt\` with the shell tool.
`;

const NARROW_SKILL = `---
name: review
description: Review code without running anything.
allowed-tools: read_file grep
---
Only read files.
`;

describe("project skills through the CLI", () => {
  let workspace: string;
  let env: NodeJS.ProcessEnv;
  let configFile: string;

  beforeAll(async () => {
    const configDir = await tempDir("harness-config-");
    configFile = join(configDir, "config.json");
    await writeFile(configFile, "{}\n");
    env = { ...childEnv(), HARNESS_CONFIG: configFile };
    workspace = await workspaceWith({
      ".agents/skills/deploy/SKILL.md": WIDENING_SKILL,
      ".agents/skills/review/SKILL.md": NARROW_SKILL,
      "notes.txt": "draft\n",
    });
  });

  const harness = (args: string[]) => finished(startHarness(args, { env }));
  const run = async (session: string, calls: unknown[], flags: string[]) => {
    const script = await jsonScript([...calls.map((call) => ({ calls: [call] })), { text: "done" }]);
    return harness([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--session",
      session,
      "--json",
      ...flags,
      "go",
    ]);
  };

  it("is not loaded until approved: the skill tool is not offered and the notice says how to approve", async () => {
    const listed = await harness(["plugins", "list", "--workspace", workspace, "--json"]);
    expectExit(listed, 0);
    const rows = JSON.parse(listed.stdout) as {
      name: string;
      kind: string;
      approved: boolean;
      loaded: boolean;
    }[];
    expect(rows.filter((r) => r.kind === "skill").map((r) => [r.name, r.approved, r.loaded])).toEqual([
      ["deploy", false, false],
      ["review", false, false],
    ]);

    const result = await run("unapproved", [{ id: "c1", name: "skill", arguments: { name: "deploy" } }], []);
    expectExit(result, 0);
    expect(result.stderr).toContain('project skill "deploy" (.agents/skills/deploy) is not loaded');
    expect(result.stderr).toContain("harness plugins approve deploy");
    const records = await readJournal(workspace, "unapproved");
    const started = ofType(records, "session.started")[0]!;
    expect((started.data.tools as { name: string }[]).map((t) => t.name)).not.toContain("skill");
    expect(resultsByCall(records).get("c1")?.error_type).toBe("UNKNOWN_TOOL");
    expect(ofType(records, "skill.activated")).toEqual([]);
  });

  it("approve records the digest in the user config; allowed-tools: shell(*) does not widen a session that denies shell", async () => {
    const approved = await harness(["plugins", "approve", "deploy", "--workspace", workspace]);
    expectExit(approved, 0);
    const config = JSON.parse(await readFile(configFile, "utf8")) as {
      plugin_approvals: Record<string, { kind: string; digest: string }[]>;
    };
    expect(config.plugin_approvals.deploy?.map((a) => a.kind)).toEqual(["skill"]);
    const digest = config.plugin_approvals.deploy?.[0]?.digest;
    expect(digest).toMatch(/^[0-9a-f]{64}$/);

    const result = await run(
      "widen",
      [
        { id: "c1", name: "skill", arguments: { name: "deploy" } },
        { id: "c2", name: "shell", arguments: { command: "touch deployed.txt" } },
      ],
      ["--shell", "deny"],
    );
    // Every change the model tried was denied: the run stops so (exit 2).
    expectExit(result, 2);
    const records = await readJournal(workspace, "widen");
    const activated = ofType(records, "skill.activated");
    expect(activated.map((r) => [r.data.name, r.data.digest, r.data.allowed_tools])).toEqual([
      ["deploy", digest, ["shell(*)"]],
    ]);
    const results = resultsByCall(records);
    expect(results.get("c1")?.status).toBe("ok");
    expect(results.get("c2")?.status).toBe("denied");
    expect(ofType(records, "process.spawned")).toEqual([]);
    expect(existsSync(join(workspace, "deployed.txt"))).toBe(false);
  });

  it("asks again once the skill changes: a changed digest is not loaded", async () => {
    await writeFile(join(workspace, ".agents/skills/deploy/SKILL.md"), `${WIDENING_SKILL}Also push.\n`);
    const result = await run("changed", [{ id: "c1", name: "skill", arguments: { name: "deploy" } }], []);
    expectExit(result, 0);
    expect(result.stderr).toContain("changed since you approved it");
    const records = await readJournal(workspace, "changed");
    expect(resultsByCall(records).get("c1")?.error_type).toBe("UNKNOWN_TOOL");
    expect(ofType(records, "skill.activated")).toEqual([]);
    const listed = await harness(["plugins", "list", "--workspace", workspace]);
    expect(listed.stdout).toMatch(/skill +deploy .*CHANGED since approved, not loaded/);
  });

  it("an active skill's allowed-tools narrow a session that allows shell", async () => {
    expectExit(await harness(["plugins", "approve", "review", "--workspace", workspace]), 0);
    const result = await run(
      "narrow",
      [
        { id: "c0", name: "shell", arguments: { command: "touch before.txt" } },
        { id: "c1", name: "skill", arguments: { name: "review" } },
        { id: "c2", name: "read_file", arguments: { path: "notes.txt" } },
        { id: "c3", name: "shell", arguments: { command: "touch after.txt" } },
      ],
      ["--shell", "allow", "--sandbox", "off"],
    );
    expectExit(result, 0);
    const results = resultsByCall(await readJournal(workspace, "narrow"));
    expect(results.get("c0")?.status).toBe("ok");
    expect(results.get("c2")?.status).toBe("ok");
    expect(results.get("c3")?.status).toBe("denied");
    expect(String(results.get("c3")?.content)).toContain('allowed-tools of the active skill "review"');
    expect(existsSync(join(workspace, "before.txt"))).toBe(true);
    expect(existsSync(join(workspace, "after.txt"))).toBe(false);
  });
});

describe("a skill's script", () => {
  it("runs only through the sandboxed shell: it cannot write outside the workspace", async () => {
    const configDir = await tempDir("harness-config-");
    await writeFile(join(configDir, "config.json"), "{}\n");
    const env = { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") };
    const outside = await tempDir("harness-outside-");
    const workspace = await workspaceWith({
      ".agents/skills/probe/SKILL.md":
        "---\nname: probe\ndescription: Probe the machine.\n---\nRun scripts/probe.sh with the shell tool.\n",
      ".agents/skills/probe/scripts/probe.sh": `echo inside > inside.txt; echo escaped > ${join(outside, "escaped.txt")} || echo refused\n`,
    });
    const harness = (args: string[]) => finished(startHarness(args, { env }));
    expectExit(await harness(["plugins", "approve", "probe", "--workspace", workspace]), 0);
    const script = await jsonScript([
      { calls: [{ id: "c1", name: "skill", arguments: { name: "probe" } }] },
      {
        calls: [
          { id: "c2", name: "shell", arguments: { command: "sh .agents/skills/probe/scripts/probe.sh" } },
        ],
      },
      { text: "done" },
    ]);
    const result = await harness([
      ...[
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--session",
        "s",
        "--json",
        "--shell",
        "allow",
      ],
      "go",
    ]);
    expectExit(result, 0);
    const records = await readJournal(workspace, "s");
    expect(ofType(records, "skill.activated").map((r) => r.data.source)).toEqual(["project"]);
    const content = String(resultsByCall(records).get("c1")?.content);
    expect(content).toContain("- scripts/probe.sh");
    expect(content).toContain(".agents/skills/probe/ in the workspace");
    expect(ofType(records, "process.spawned").map((r) => r.data.sandbox_profile)).toEqual([
      "workspace-write",
    ]);
    expect(await readFile(join(workspace, "inside.txt"), "utf8")).toBe("inside\n");
    expect(existsSync(join(outside, "escaped.txt"))).toBe(false);
  });
});
