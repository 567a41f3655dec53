/** Help texts of `harness mcp list | test | approve | add | remove` (kept apart: --help loads no MCP code). */

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

export const ADD_HELP = `harness mcp add NAME [options] -- COMMAND [ARGS...]
harness mcp add NAME --url URL [options]

Add your own MCP server NAME to your user config ($HARNESS_CONFIG, else
~/.config/harness/config.json) under "mcp_servers"; every other key is kept, and the file is
replaced in one step. The project's harness.config.json is never written. A name your config
already defines is refused: remove it first. The definition is checked as harness run checks it.

  --env NAME=VALUE       a variable set for the server (repeatable)
  --pass-env NAME        pass harness's own variable NAME through (repeatable)
  --required             a run stops when the server cannot start
  --optional             a run goes on without it (the default)
  --trust                believe the server's tool annotations: its read-only tools
                         (readOnlyHint) run without asking and are not changes
  --network              let the sandboxed server reach the network (default: loopback only;
                         a server started with npx -y, pnpm dlx or uvx needs it to download)
  --sandbox PROFILE      workspace-write (default) | read-only | off
  --cwd DIR              its working directory (absolute, or relative to the workspace)
  --read-path PATH       a host path the sandboxed server may read, e.g. where it is installed
                         (absolute or ~/...; repeatable)
  --startup-timeout MS   how long it may take to start (default 30000)
  --url URL              a remote server (Streamable HTTP, falling back to SSE) instead of a command
  --bearer-token-env VAR the variable holding its bearer token (with --url; read at connect)
  --scope user           where it is written: your user config (the only scope)
  --json                 print what was added as JSON

Examples:
  harness mcp add files -- /usr/local/bin/mcp-server-filesystem .
  harness mcp add everything --network -- npx -y @modelcontextprotocol/server-everything
  harness mcp add docs --trust --url https://example.com/mcp`;

export const REMOVE_HELP = `harness mcp remove NAME [--json]

Remove the MCP server NAME from your user config's "mcp_servers", keeping every other key. A
name your config does not define is an error (a project's proposal lives in its own file).`;
