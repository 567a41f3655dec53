import { resolve } from "node:path";
import { EngineError } from "../engine/errors.js";
import { JournalError, type JournalErrorCode } from "../journal/store.js";
import { ScriptError } from "../providers/scripted/script-error.js";
import { SessionOperationError } from "../session/operations/error.js";
import { UsageError } from "../session/usage-error.js";
import { CodedError } from "../shared/coded-error.js";
import { closest } from "../shared/suggest.js";
import { escapeForTerminal, escapeLines } from "../shared/terminal-text.js";
import { traceMark } from "../shared/trace-startup.js";
import type { Options } from "./args.js";
import { consoleToStderr } from "./console-stderr.js";
import { EXIT } from "./exit-codes.js";
import { withWorkspace } from "./next-steps.js";
import { output } from "./output.js";

export interface Command {
  help: string;
  /** A command with subcommands: the help of the one named in `args`, if it has its own. */
  helpFor?(args: readonly string[]): string | undefined;
  /** Its flags (a parseArgs table), for completion; without one, completion offers the flags its help names. */
  options?: Options;
  run(args: string[]): Promise<number>;
}

export type CommandTable = Record<string, { summary: string; load: () => Promise<Command> }>;

/**
 * Every command: its one-line summary for `harness --help`, and how to load it. Commands are
 * imported only when run, so the top-level help loads none of them.
 */
const COMMANDS: CommandTable = {
  run: {
    summary: "run an agent on a goal in a workspace",
    load: async () => (await import("./commands/run.js")).runCommand,
  },
  chat: {
    summary: "talk to an agent turn by turn in a terminal (bare harness on a terminal)",
    load: async () => (await import("./commands/chat.js")).chatCommand,
  },
  resume: {
    summary: "continue a recorded session",
    load: async () => (await import("./commands/run.js")).resumeCommand,
  },
  fork: {
    summary: "start a new session from a session's history (all of it, or up to a record)",
    load: async () => (await import("./commands/fork.js")).forkCommand,
  },
  undo: {
    summary: "put the workspace's files back as they were before a turn, a call or a record of a session",
    load: async () => (await import("./commands/undo.js")).undoCommand,
  },
  audit: {
    summary: "check that the workspace is its recorded base plus every change a session recorded",
    load: async () => (await import("./commands/audit.js")).auditCommand,
  },
  compact: {
    summary: "summarize a stopped session's older turns now (the next resume sends the summary)",
    load: async () => (await import("./commands/compact.js")).compactCommand,
  },
  demo: {
    summary: "run the built-in offline demo (fix hello.txt, verified by the host)",
    load: async () => (await import("./commands/demo.js")).demoCommand,
  },
  sessions: {
    summary: "list the sessions recorded in a workspace",
    load: async () => (await import("./commands/sessions.js")).sessionsCommand,
  },
  inspect: {
    summary: "show a readable timeline of a session",
    load: async () => (await import("./commands/inspect.js")).inspectCommand,
  },
  report: {
    summary: "write a session as one self-contained HTML page: harness report SESSION -o FILE",
    load: async () => (await import("./commands/report.js")).reportCommand,
  },
  otel: {
    summary: "send a recorded session to an OpenTelemetry collector: harness otel export SESSION",
    load: async () => (await import("./commands/otel.js")).otelCommand,
  },
  journal: {
    summary: "verify, repair or adopt a session journal",
    load: async () => (await import("./commands/journal.js")).journalCommand,
  },
  unlock: {
    summary: "clear a writer lock whose owner is gone",
    load: async () => (await import("./commands/journal.js")).unlockCommand,
  },
  policy: {
    summary: "explain how the effective policy decides a call",
    load: async () => (await import("./commands/policy.js")).policyCommand,
  },
  diff: {
    summary: "show the changes a session proposed",
    load: async () => (await import("./commands/proposals.js")).diffCommand,
  },
  apply: {
    summary: "apply a session's proposed changes (compare-and-swap per file)",
    load: async () => (await import("./commands/proposals.js")).applyCommand,
  },
  eval: {
    summary: "run an evaluation suite (reservations, faults) and report",
    load: async () => (await import("./commands/eval.js")).evalCommand,
  },
  mcp: {
    summary:
      "your MCP servers (add, remove, list, test, approve) and serving harness's tools to MCP clients (serve)",
    load: async () => (await import("./commands/mcp.js")).mcpCommand,
  },
  acp: {
    summary: "be an Agent Client Protocol agent for an editor (Zed, JetBrains...) on stdin/stdout",
    load: async () => (await import("./commands/acp.js")).acpCommand,
  },
  plugins: {
    summary: "skills, commands and plugins: list them, approve a project's by digest",
    load: async () => (await import("./commands/plugins.js")).pluginsCommand,
  },
  serve: {
    summary: "serve sessions to programs over JSON-RPC (stdio, or HTTP with SSE events and a viewer)",
    load: async () => (await import("./commands/serve.js")).serveCommand,
  },
  worker: {
    summary: "run queued sessions from a PostgreSQL database (leases, fencing)",
    load: async () => (await import("./commands/worker.js")).workerCommand,
  },
  queue: {
    summary: "queue sessions for workers (submit, status) in a PostgreSQL database",
    load: async () => (await import("./commands/queue.js")).queueCommand,
  },
  review: {
    summary: "resolve a call whose outcome is unknown, with evidence",
    load: async () => (await import("./commands/review.js")).reviewCommand,
  },
  models: {
    summary: "list your model profiles and the models a provider offers",
    load: async () => (await import("./commands/models.js")).modelsCommand,
  },
  init: {
    summary: "create your user config: a default model profile (never asks for a key)",
    load: async () => (await import("./commands/init.js")).initCommand,
  },
  completion: {
    summary: "print a shell completion script: harness completion bash|zsh|fish",
    load: async () => (await import("./commands/completion.js")).completionCommand(COMMANDS),
  },
  help: {
    summary: "show help for a command: harness help COMMAND",
    load: async () => helpCommand,
  },
  version: {
    summary: "print the version",
    load: async () => versionCommand,
  },
};

// The bundle's entry (bin.ts) installs an importer for user files through this; see import-file.ts.
export { setFileImporter } from "../shared/import-file.js";

function topLevelHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((k) => k.length));
  const lines = Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(width)}  ${summary}`);
  return [
    "harness: run AI agents so that what they did can be proven.",
    "",
    "Usage: harness <command> [options]",
    "",
    "Commands:",
    ...lines,
    "",
    "Options (any command):",
    "  --help, -h         show help (also: harness help COMMAND)",
    "  --version, -V, -v  print the version",
    "  --no-color         no colours (also: the NO_COLOR environment variable)",
    "  --quiet, -q        no progress lines on stderr: only results and errors",
    "",
    "Start with: harness demo (offline), or harness init to choose your default model",
  ].join("\n");
}

const helpCommand: Command = {
  help: "Usage: harness help [COMMAND [SUBCOMMAND]]\n\nShow the help of a command (the same as harness COMMAND --help).",
  async run(args) {
    const [name, ...rest] = args;
    if (name === undefined) {
      process.stdout.write(`${topLevelHelp()}\n`);
      return EXIT.ok;
    }
    const entry = COMMANDS[name];
    if (!entry) return unknownCommand(name);
    const command = await entry.load();
    process.stdout.write(`${command.helpFor?.(rest) ?? command.help}\n`);
    return EXIT.ok;
  },
};

const versionCommand: Command = {
  help: "Usage: harness version\n\nPrint the version (also: harness --version, -V, -v).",
  async run() {
    const { harnessVersion } = await import("../session/version.js");
    process.stdout.write(`harness ${harnessVersion()}\n`);
    return EXIT.ok;
  },
};

function unknownCommand(name: string): number {
  const guess = closest(name, Object.keys(COMMANDS));
  process.stderr.write(
    `harness: unknown command "${escapeForTerminal(name)}"` +
      (guess ? `; did you mean: harness ${guess}?\n` : "\n") +
      "(list the commands with: harness help)\n",
  );
  return EXIT.usage;
}

/**
 * Options every command takes, wherever they appear before a `--`: they change how harness
 * prints, never what it does, so they are taken out before the command parses its own flags.
 */
function takeGlobalOptions(argv: readonly string[]): string[] {
  const end = argv.indexOf("--");
  const head = end === -1 ? argv : argv.slice(0, end);
  const tail = end === -1 ? [] : argv.slice(end);
  const kept: string[] = [];
  for (const arg of head) {
    if (arg === "--no-color") process.env.NO_COLOR = "1";
    else if (arg === "--quiet" || arg === "-q") output.quiet = true;
    else kept.push(arg);
  }
  return [...kept, ...tail];
}

/**
 * The value of `--workspace`/`-w` as `harness run` will parse it, or undefined (the current
 * directory); null when the run records no new base (help, a continued session). Only a hint: a
 * misread value names another directory, whose listing is never used.
 */
function workspaceArg(args: readonly string[]): string | undefined | null {
  let found: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") break;
    if (arg === "--help" || arg === "-h" || arg === "--continue" || arg === "-c") return null;
    if (arg === "--workspace" || arg === "-w") found = args[++i];
    else if (arg.startsWith("--workspace=")) found = arg.slice("--workspace=".length);
    else if (arg.startsWith("-w") && !arg.startsWith("--")) found = arg.slice(2);
  }
  return found;
}

export async function main(argv: string[]): Promise<number> {
  consoleToStderr();
  let args = takeGlobalOptions(argv);
  // Bare `harness` on a terminal opens the chat; off one it prints the help as before.
  if (args.length === 0 && process.stdin.isTTY === true && process.stdout.isTTY === true) args = ["chat"];
  const [name, ...rest] = args;
  if (name === undefined || name === "--help" || name === "-h") {
    process.stdout.write(`${topLevelHelp()}\n`);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === "--version" || name === "-V" || name === "-v") return versionCommand.run([]);
  const entry = COMMANDS[name];
  if (!entry) return unknownCommand(name);
  traceMark("main: entered");
  // A new run's workspace base on a large tree starts with find: started now, it lists the tree
  // while the command loads (src/workspace/listing-prefetch.ts).
  const workspace = name === "run" ? workspaceArg(rest) : null;
  if (workspace !== null) (await import("../workspace/listing-prefetch.js")).prefetchListing(workspace);
  const command = await entry.load();
  traceMark(`main: command ${name} loaded`);
  // What follows `--` is not harness's (a goal, the command of `mcp add`): its --help is not ours.
  const own = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
  if (name !== "help" && (own.includes("--help") || own.includes("-h"))) {
    process.stdout.write(`${command.helpFor?.(rest) ?? command.help}\n`);
    return EXIT.ok;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    return reportError(error, name, workspaceArgument(rest));
  }
}

/**
 * Journal states a person resolves (the message says how: wait, `harness unlock`, `harness journal
 * repair`, `harness journal adopt`, fix the key file), as opposed to harness failing.
 */
const JOURNAL_REFUSALS: ReadonlySet<JournalErrorCode> = new Set<JournalErrorCode>([
  "LOCKED",
  "STALE_LOCK",
  "TORN_TAIL",
  "CORRUPT",
  "TAMPERED",
  "UNTRUSTED",
  "KEY",
  // Another worker holds the session's lease: this process must stop, the session is not broken.
  "FENCED",
]);

/** The workspace a command was pointed at (`--workspace DIR`, `-w DIR`, `--workspace=DIR`), if not the current directory. */
function workspaceArgument(args: readonly string[]): { root: string } | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") return undefined;
    const inline = /^--workspace=(.*)$/.exec(arg)?.[1];
    const value = inline ?? (arg === "--workspace" || arg === "-w" ? args[i + 1] : undefined);
    if (value !== undefined) return { root: resolve(value) };
  }
  return undefined;
}

/**
 * Error messages may quote model output, a script or a journal: they are escaped like any of
 * those. A command they suggest (`harness unlock ID`) names the workspace when it is not the
 * current directory, so it works as printed.
 */
function reportError(error: unknown, command: string, workspace: { root: string } | undefined): number {
  const fix = (message: string) => escapeForTerminal(withWorkspace(message, workspace));
  if (error instanceof UsageError) {
    process.stderr.write(`harness ${command}: ${fix(error.message)}\n(see: harness ${command} --help)\n`);
    return EXIT.usage;
  }
  if (error instanceof ScriptError) {
    process.stderr.write(`harness ${command}: bad script: ${escapeForTerminal(error.message)}\n`);
    return EXIT.usage;
  }
  // McpRequiredServerError, by code: the MCP client SDK is loaded only by commands that use it.
  if (error instanceof CodedError && error.code === "MCP_REQUIRED_SERVER_FAILED") {
    // Nothing was recorded and no model was asked: the run stopped before it began. The message
    // spans lines (one per server, the servers' stderr quoted under them): each escaped, laid out.
    const [first = "", ...rest] = escapeLines(error.message);
    process.stderr.write(`harness ${command}: ${first}\n${rest.map((line) => `  ${line}\n`).join("")}`);
    return EXIT.stopped;
  }
  if (error instanceof EngineError) {
    process.stderr.write(`harness ${command}: ${fix(error.message)}\n`);
    return error.code === "BAD_INPUT" ||
      error.code === "IDENTITY_MISMATCH" ||
      error.code === "SESSION_NOT_FOUND"
      ? EXIT.usage
      : EXIT.internal;
  }
  // The journal moved under a person's decision (JOURNAL_CHANGED): nothing was appended, they look again.
  if (error instanceof SessionOperationError) {
    process.stderr.write(`harness ${command}: refused (${error.code}): ${fix(error.message)}\n`);
    return EXIT.journalRefused;
  }
  if (error instanceof JournalError) {
    if (error.code === "INVALID_SESSION_ID") {
      process.stderr.write(`harness ${command}: ${escapeForTerminal(error.message)}\n`);
      return EXIT.usage;
    }
    const refused = JOURNAL_REFUSALS.has(error.code);
    process.stderr.write(
      `harness ${command}: ${refused ? "journal refused" : "journal error"} (${error.code}): ${fix(error.message)}\n`,
    );
    return refused ? EXIT.journalRefused : EXIT.internal;
  }
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`harness ${command}: internal error: ${escapeLines(detail).join("\n  ")}\n`);
  return EXIT.internal;
}
