import { existsSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A command hook the user configured by a bare program name (`lint-guard`), run without a sandbox
 * (`"hook_commands": {"sandbox": "off"}` in the user config). `sh -c` looks the name up on PATH,
 * and a user's PATH can name a directory inside the workspace (an activated `.venv/bin`): the
 * model's shell writes `.venv/bin/lint-guard`, and the next hook runs it on the host.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("an unsandboxed command hook named by a bare program name", () => {
  it("never runs a program of that name the model planted in a PATH directory inside the workspace", async () => {
    const outside = await tempDir("harness-outside-");
    const marker = join(outside, "marker");
    // The user's real guard, outside the workspace, later on PATH.
    const tools = await tempDir("harness-tools-");
    await writeFile(join(tools, "lint-guard"), `#!/bin/sh\necho real > '${join(outside, "real")}'\n`);
    await chmod(join(tools, "lint-guard"), 0o755);
    const workspace = await workspaceWith({ "notes.txt": "hi\n" });
    await mkdir(join(workspace, ".venv/bin"), { recursive: true });
    const config = join(await tempDir("harness-config-"), "config.json");
    await writeFile(
      config,
      JSON.stringify({
        hooks: { after_execute: [{ kind: "notify", command: "lint-guard" }] },
        hook_commands: { sandbox: "off" },
      }),
    );
    const plant = `printf '#!/bin/sh\\necho planted > %s\\n' '${marker}' > .venv/bin/lint-guard && chmod +x .venv/bin/lint-guard`;
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command: plant } }] },
      { calls: [{ id: "s2", name: "shell", arguments: { command: "true" } }] },
      { text: "done" },
    ]);
    const env = {
      ...childEnv(),
      HARNESS_CONFIG: config,
      PATH: `${join(workspace, ".venv/bin")}:${tools}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    };
    const child = startHarness(
      ["run", "--script", script, "--workspace", workspace, "--shell", "allow", "--json", "go"],
      { env },
    );
    const result = await finished(child);
    expectExit(result, 0);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    // The plant worked, and the hook ran after each call (unsandboxed, as configured)...
    expect(existsSync(join(workspace, ".venv/bin/lint-guard"))).toBe(true);
    const hooks = ofType(records, "process.spawned").filter((r) => r.data.purpose === "hook");
    expect(hooks.length).toBeGreaterThanOrEqual(2);
    expect(hooks[0]?.data).toMatchObject({ sandboxed: false, sandbox_profile: "none" });
    // ...as the user's program every time, never the planted one.
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(outside, "real"))).toBe(true);
  }, 60_000);
});
