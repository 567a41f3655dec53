import { realpathSync } from "node:fs";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { type CliResult, childEnv, finished, startHarness, tempDir } from "./helpers.js";

/**
 * The reference MCP server (@modelcontextprotocol/server-everything, nobody here wrote it) as the
 * user's server in e2e runs of the built CLI, and a scripted model that records every request it
 * was sent.
 */

const require = createRequire(import.meta.url);
export const EVERYTHING = join(
  dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist/index.js",
);
/** What a sandboxed server must be allowed to read: where the reference server's code lives. */
export const NODE_MODULES = realpathSync(join(dirname(require.resolve("zod/package.json")), ".."));

/** The reference server over stdio, sandboxed as configured by default. */
export function everything(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [EVERYTHING, "stdio"], read_paths: [NODE_MODULES], ...extra };
}

/**
 * A server command that writes a marker file (and its pid) and then runs the reference server:
 * whether the file exists says whether harness ever started it.
 */
export async function markedServer(
  dir: string,
  /** Where the marker goes: a directory the server's sandbox may write (the workspace). */
  markerDir = dir,
): Promise<{ command: string; marker: string; pidFile: string }> {
  const command = join(dir, "marked-server.sh");
  const marker = join(markerDir, "server-started");
  const pidFile = join(markerDir, "server-pid");
  await writeFile(
    command,
    `#!/bin/sh\necho started > "${marker}"\necho $$ > "${pidFile}"\nexec "${process.execPath}" "${EVERYTHING}" stdio\n`,
  );
  await chmod(command, 0o755);
  return { command, marker, pidFile };
}

/** A user config file holding `config`; the env that points harness at it. */
export async function userConfig(
  config: Record<string, unknown>,
): Promise<{ file: string; env: NodeJS.ProcessEnv }> {
  const dir = await tempDir("harness-mcp-config-");
  const file = join(dir, "config.json");
  await writeFile(file, JSON.stringify(config));
  return { file, env: { ...childEnv(), HARNESS_CONFIG: file } };
}

export interface RecordingScript {
  path: string;
  /** Every request the model was sent: its step and the messages, as the script received them. */
  requests(): Promise<{ step: number; messages: { role: string; content?: unknown }[] }[]>;
}

/** A scripted model: step 0 makes `call`, later steps answer "done"; each request is logged. */
export async function recordingScript(call: {
  name: string;
  arguments: Record<string, unknown>;
}): Promise<RecordingScript> {
  const dir = await tempDir("harness-mcp-script-");
  const path = join(dir, "model.mjs");
  const log = join(dir, "requests.ndjson");
  await writeFile(
    path,
    `import { appendFileSync } from "node:fs";
export default function model(messages, step) {
  appendFileSync(${JSON.stringify(log)}, JSON.stringify({ step, messages }) + "\\n");
  if (step === 0) return { text: "calling", calls: [{ id: "c1", ...${JSON.stringify(call)} }] };
  return { text: "done" };
}
`,
  );
  return {
    path,
    requests: async () => {
      const text = await readFile(log, "utf8").catch(() => "");
      return text
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    },
  };
}

export function run(args: readonly string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<CliResult> {
  return finished(startHarness(args, { env, ...(cwd ? { cwd } : {}) }));
}
