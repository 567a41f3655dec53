import { mkdtemp, open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileEqualsCheck } from "../../engine/acceptance.js";
import { DEMO_EXPECTED, DEMO_FILE, DEMO_GOAL, DEMO_INITIAL, demoScript } from "../../examples/demo/script.js";
import { modePolicy } from "../../policy/policy-permissions.js";
import { ScriptedProvider } from "../../providers/scripted/provider.js";
import { ToolRegistry } from "../../runtime/registry.js";
import { openWorkspace } from "../../session/workspace.js";
import { errnoCode } from "../../shared/errno.js";
import { createFileTools } from "../../tools/builtin.js";
import { parse } from "../args.js";
import { stderrNotices } from "../notices.js";
import { runSession } from "../session-runner.js";

const HELP = `Usage: harness demo [--workspace DIR] [--read-only] [--json]

Runs the built-in scripted model offline (no keys, no network) on ${DEMO_FILE}:
it reads the file, edits "helo" to "hello" bound to the version it read, and finishes.
The host then checks that the file equals "hello, harness\\n": only that makes it verified.

  --workspace, -w DIR  where to run (created if missing; ${DEMO_FILE} is created only if absent,
                       never overwritten). Default: a fresh temporary directory.
  --read-only          deny writes: the edit is refused, the run stops (exit 2), the file is unchanged
  --json               print one JSON summary object on stdout
  --events             print journal events as NDJSON on stdout

Run it twice in the same workspace: the second run re-checks the file and is verified with no
new model request and no new tool call.`;

export const demoCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const { values } = parse(args, {
      workspace: { type: "string", short: "w" },
      "read-only": { type: "boolean" },
      json: { type: "boolean" },
      events: { type: "boolean" },
    });
    const dir = values.workspace ?? (await mkdtemp(join(tmpdir(), "harness-demo-")));
    if (values.workspace === undefined)
      process.stderr.write(`harness demo: using a fresh workspace at ${dir}\n`);
    const workspace = await openWorkspace(dir, { create: true, notify: stderrNotices });
    await createIfAbsent(join(workspace.root, DEMO_FILE), DEMO_INITIAL);
    const readOnly = values["read-only"] === true;
    const modes = modePolicy({ write: "allow", readOnly });
    const registry = new ToolRegistry();
    for (const tool of createFileTools()) registry.register(tool);
    return runSession({
      workspace,
      sessionId: readOnly ? "demo-read-only" : "demo",
      mode: "auto",
      goal: DEMO_GOAL,
      setup: {
        provider: ScriptedProvider.fromFunction(demoScript, "demo"),
        snapshot: registry.snapshot(),
        policy: { describe: modes.describe, digest: modes.digest, permissions: modes },
        approver: {
          async request() {
            return { decision: "deny", scope: "once", by: "harness", reason: "the demo never asks" };
          },
        },
      },
      acceptance: [new FileEqualsCheck(workspace.fs, DEMO_FILE, DEMO_EXPECTED)],
      limits: {},
      json: values.json === true,
      events: values.events === true,
    });
  },
};

/** O_EXCL: never overwrite what a user put there. */
async function createIfAbsent(path: string, content: string): Promise<void> {
  try {
    const handle = await open(path, "wx");
    await handle.writeFile(content);
    await handle.sync();
    await handle.close();
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
  }
}
