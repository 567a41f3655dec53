import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarnessWith } from "../e2e-shell/helpers.js";
import {
  type CliResult,
  ensureBuilt,
  expectExit,
  finished,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * `policy explain` prints rule text from a project's harness.config.json (a cloned repository
 * writes it) and the command or path from the user's argument (often pasted from a model's
 * call). Neither may drive the terminal: every such string is shown escaped (NO_COLOR).
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const ESC = "\u001b";
const RLO = "\u202e";
const HOSTILE = `${ESC}]0;pwned\u0007${ESC}[2K${RLO}`;
const SHOWN = "\\x1b]0;pwned\\x07\\x1b[2K\\u202e";
/** Rules refuse C0 controls, but a C1 CSI (one byte on some terminals) and bidi controls pass. */
const IN_RULE = `\u009b2K${RLO}`;
const IN_RULE_SHOWN = "\\x9b2K\\u202e";

function expectNoControl(label: string, result: CliResult): void {
  for (const text of [result.stdout, result.stderr]) {
    expect(text, `${label}: ESC reached the terminal`).not.toContain(ESC);
    expect(text, `${label}: U+202E reached the terminal`).not.toContain(RLO);
    expect(text, `${label}: BEL reached the terminal`).not.toContain("\u0007");
    expect(text, `${label}: CSI reached the terminal`).not.toContain("\u009b");
  }
}

async function explainIn(workspace: string, tool: string, args: unknown, json = false): Promise<CliResult> {
  const config = join(await tempDir("harness-user-config-"), "config.json");
  await writeFile(config, "{}");
  return finished(
    startHarnessWith(
      [
        "policy",
        "explain",
        tool,
        JSON.stringify(args),
        "--workspace",
        workspace,
        ...(json ? ["--json"] : []),
      ],
      { HARNESS_CONFIG: config },
    ),
  );
}

describe("policy explain escapes what a config or the argument put in its output", () => {
  it("a project's hostile rule text, each command part, and an ignored loosening rule", async () => {
    const workspace = await workspaceWith({
      "harness.config.json": JSON.stringify({
        permissions: { deny: [`shell(rm x${IN_RULE}*)`], allow: [`shell(echo ${IN_RULE}*)`] },
      }),
    });
    const command = `rm x${IN_RULE}y && echo '${HOSTILE}hi'`;
    const text = await explainIn(workspace, "shell", { command });
    expectExit(text, 0);
    expectNoControl("explain", text);
    expect(text.stdout).toContain("shell: deny");
    expect(text.stdout).toContain(`  rule:    shell(rm x${IN_RULE_SHOWN}*)`);
    expect(text.stdout).toContain(`  part:    rm x${IN_RULE_SHOWN}y`);
    expect(text.stdout).toMatch(/^ {2}part: {4}echo .*pwned\\x07\\x1b\[2K\\u202ehi/m);

    // The untrusted project may not loosen: its allow is listed as ignored, escaped too.
    const loosening = await explainIn(workspace, "shell", { command: `echo ${IN_RULE}z` });
    expectExit(loosening, 0);
    expectNoControl("explain an ignored rule", loosening);
    expect(loosening.stdout).toContain(`  ignored: shell(echo ${IN_RULE_SHOWN}*) from `);

    const json = await explainIn(workspace, "shell", { command }, true);
    expectExit(json, 0);
    expectNoControl("explain --json", json);
    // Still exact JSON: the rule parses back to the config's own characters.
    expect(JSON.parse(json.stdout)).toMatchObject({ decision: "deny", rule: `shell(rm x${IN_RULE}*)` });
  });

  it("a hostile path argument", async () => {
    const workspace = await workspaceWith({});
    const result = await explainIn(workspace, "read_file", { path: `notes${HOSTILE}.txt` });
    expectExit(result, 0);
    expectNoControl("explain", result);
    expect(result.stdout).toContain(`  path: notes${SHOWN}.txt`);
  });
});
