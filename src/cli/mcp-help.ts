/** Help texts of `harness mcp list | test | approve` (kept apart: --help loads no MCP code). */

export const LIST_HELP = `harness mcp list [--workspace DIR] [--json]

The MCP servers your user config defines and the ones the project at DIR proposes in its
harness.config.json, without starting any: where each comes from, whether it starts in
harness run (a proposal only after harness mcp approve, for this workspace and these files),
required, trusted; for a proposal, what an approval binds (the files it runs and their SHA-256)
and why it does not start.`;

export const TEST_HELP = `harness mcp test NAME [--workspace DIR] [--json]

Start server NAME as harness run would (its sandbox, its environment), list its tools with
the names the model sees and their effect classes, and stop it. Exits 2 with the server's
error when it cannot start. A project's proposal must be approved first.`;

export const APPROVE_HELP = `harness mcp approve NAME [--workspace DIR]

Show the definition of the MCP server NAME that the project at DIR proposes and the files it
runs, and record your approval of exactly that under "mcp_approvals" in your user config
($HARNESS_CONFIG, else ~/.config/harness/config.json): bound to this workspace's real path, the
definition's digest and the SHA-256 of every file it names; every other key is kept. The same
proposal in another workspace, a changed definition or a changed file does not start until you
approve it again (checked before every start).`;
