import { TaskPermissionPolicy } from "../../src/packs/reservations/policy.js";
import { deriveKey } from "../../src/packs/reservations/task.js";
import { deepFreeze } from "../../src/policy/approver.js";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { buildPolicy } from "../../src/policy/permissions.js";
import { modePolicy, PolicyPermissions } from "../../src/policy/policy-permissions.js";
import { ScopedPermissions, validateScope } from "../../src/policy/scope.js";
import { subjectKindOf } from "../../src/policy/subject-kind.js";
import type { PermissionRequest } from "../../src/runtime/ports.js";
import type { JsonObject } from "../../src/shared/json.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { CAMERA_TASK, FULL, reserveArgs } from "../reservations/helpers.js";
import { type Example, permissionContract, permissionRequest as request } from "./permission-contract.js";

/* Every PermissionPort in src runs the one permission contract. */

const tools = new Map(createFileTools().map((tool) => [tool.name, tool]));
const kinds = (name: string) => {
  const tool = tools.get(name);
  if (tool) return subjectKindOf(tool);
  return name === "shell" ? "command" : undefined;
};

const read = (path: string) => request("read_file", "read_only", { path });
const edit = (path: string) => request("edit_file", "local_write", { path, old_text: "a", new_text: "b" });
const shell = (command: string) => request("shell", "process_execution", { command });

/** Rules on files and commands, each decision present, some overlapping on purpose. */
const RULES = {
  allow: ["edit_file(src/**)", "shell(npm test)"],
  ask: ["edit_file(src/gen/**)"],
  deny: ["edit_file(src/secret/**)", "shell(rm *)"],
};

const RULE_EXAMPLES: Example[] = [
  { request: read("README.md"), verdict: "allow" },
  { request: edit("src/a.ts"), verdict: "allow" },
  { request: shell("npm test"), verdict: "allow" },
  { request: shell("npm run build"), verdict: "ask" },
  { request: read(".env"), verdict: "ask" },
  { request: shell("rm -rf build"), verdict: "deny" },
];

const RULE_CONFLICTS: Example[] = [
  { request: edit("src/gen/out.ts"), verdict: "ask" },
  { request: edit("src/secret/key.ts"), verdict: "deny" },
  { request: shell("npm test && rm -rf /"), verdict: "deny" },
  { request: shell("npm test && npm run build"), verdict: "ask" },
];

permissionContract("modePolicy (rules and modes given in code)", async () => ({
  port: modePolicy(RULES, kinds),
  examples: RULE_EXAMPLES,
  conflicts: RULE_CONFLICTS,
}));

permissionContract("PolicyPermissions over a project config and the CLI's flags", async () => ({
  // The project denies what the CLI allows, and the CLI asks where the project allows.
  port: new PolicyPermissions(
    buildPolicy([
      {
        source: "project config (harness.config.json)",
        trusted: true,
        allow: ["edit_file(src/**)"],
        deny: ["edit_file(src/secret/**)", "shell(rm *)"],
      },
      cliLayer({ allow: ["shell(npm test)", "edit_file(src/secret/**)"], ask: ["edit_file(src/gen/**)"] }),
    ]),
    kinds,
  ),
  examples: RULE_EXAMPLES,
  conflicts: RULE_CONFLICTS,
}));

permissionContract("ScopedPermissions around the run's policy", async () => {
  const files = { "README.md": "# x\n", "src/sum.ts": "x\n", "src/secret.ts": "k\n", "notes.md": "n\n" };
  const scope = await validateScope(
    { readPaths: ["README.md", "src/sum.ts", "src/secret.ts"], editPaths: ["src/sum.ts"] },
    new MemoryWorkspaceFs(files),
  );
  // The policy inside allows writes and commands; the scope narrows it to the task's files.
  const inner = modePolicy(
    { write: "allow", shell: "allow", ask: ["read_file(README.md)"], deny: ["read_file(src/secret.ts)"] },
    kinds,
  );
  return {
    port: new ScopedPermissions(inner, scope, kinds),
    examples: [
      { request: read("src/sum.ts"), verdict: "allow" },
      { request: edit("src/sum.ts"), verdict: "allow" },
      { request: read("notes.md"), verdict: "deny" },
      { request: read("README.md"), verdict: "ask" },
    ],
    conflicts: [
      // The policy allows; the scope does not.
      { request: edit("README.md"), verdict: "deny" },
      { request: shell("npm test"), verdict: "deny" },
      // The scope lets it through; the policy denies or asks.
      { request: read("src/secret.ts"), verdict: "deny" },
      { request: read("README.md"), verdict: "ask" },
    ],
  };
});

permissionContract("TaskPermissionPolicy (a reservation task)", async () => {
  const task = CAMERA_TASK;
  const reserve = (over: JsonObject): PermissionRequest =>
    deepFreeze({
      tool: "reserve",
      effect: "external_side_effect",
      arguments: reserveArgs(over),
      history: FULL,
    });
  return {
    port: new TaskPermissionPolicy(task),
    examples: [
      { request: request("search", "read_only", { query: "camera" }), verdict: "allow" },
      { request: reserve({}), verdict: "allow" },
      { request: request("delete_everything", "destructive", {}), verdict: "deny" },
    ],
    conflicts: [
      // Everything the session observed allows it, but the quantity is not the task's.
      { request: reserve({ quantity: 2, idempotency_key: deriveKey(task, "camera", 2) }), verdict: "deny" },
      { request: reserve({ idempotency_key: "forged" }), verdict: "deny" },
    ],
  };
});
