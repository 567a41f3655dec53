/** Help texts of `harness mcp list | test | approve` (kept apart: --help loads no MCP code). */

export const LIST_HELP = `harness mcp list [--workspace DIR] [--json]

The MCP servers your user config defines and the ones the project at DIR proposes in its
harness.config.json, without starting any: where each comes from, whether it starts in
harness run (a proposal only after harness mcp approve), required, trusted.`;

export const TEST_HELP = `harness mcp test NAME [--workspace DIR] [--json]

Start server NAME as harness run would (its sandbox, its environment), list its tools with
the names the model sees and their effect classes, and stop it. Exits 2 with the server's
error when it cannot start. A project's proposal must be approved first.`;

export const APPROVE_HELP = `harness mcp approve NAME [--workspace DIR]

Show the definition of the MCP server NAME that the project at DIR proposes, and record your
approval of exactly that definition (its digest) under "mcp_approvals" in your user config
($HARNESS_CONFIG, else ~/.config/harness/config.json); every other key is kept. If the project
later changes the definition, it no longer starts until you approve it again.`;
