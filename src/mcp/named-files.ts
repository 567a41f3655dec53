import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { isStdioDefinition, type McpServerDefinition } from "./config.js";

/**
 * The files a stdio server definition runs, as absolute paths: its command when it is a path, and
 * every argument that names an existing file (a script, a module) or a package directory (its
 * package.json and the entry file Node would run), resolved from the server's
 * working directory. The caller keeps those inside the workspace, through symlinks. They join the protected set before any tool runs, like hook scripts, so the agent
 * cannot rewrite a program the host will start (a server may run outside the sandbox, and it is
 * started again on the next run). A user approves a definition by digest; this keeps what it
 * names as it was when approved, as far as the agent is concerned.
 */
export function serverNamedFiles(
  definitions: readonly McpServerDefinition[],
  workspaceRoot: string,
): string[] {
  const files = new Set<string>();
  for (const definition of definitions) {
    if (!isStdioDefinition(definition)) continue;
    const cwd = definition.cwd === undefined ? workspaceRoot : path.resolve(workspaceRoot, definition.cwd);
    const loaders = Object.entries(definition.env).flatMap(([name, value]) =>
      CODE_LOADING_VARIABLES.has(name) ? [value] : [],
    );
    for (const word of namingWords(definition.command, definition.args, loaders)) {
      const candidate = path.resolve(cwd, word);
      if (isFile(candidate)) files.add(candidate);
      else if (isDirectory(candidate)) for (const file of packageEntry(candidate)) files.add(file);
    }
  }
  return [...files].sort();
}

/**
 * Variables whose value makes the program load and run a file (`NODE_OPTIONS=--require ./x.js`,
 * `PYTHONSTARTUP=./x.py`): their words name files as surely as an argument does. Other variables
 * are data (a log file a server writes each run must not count as a program it runs).
 */
const CODE_LOADING_VARIABLES: ReadonlySet<string> = new Set([
  "NODE_OPTIONS",
  "PYTHONSTARTUP",
  "BASH_ENV",
  "ENV",
  "LD_PRELOAD",
  "PERL5OPT",
  "RUBYOPT",
  "JAVA_TOOL_OPTIONS",
]);

/**
 * The words of a definition that may name a file: the command, each argument, the value of an
 * `--option=value` argument, and each word of a code-loading variable's value. Only those naming
 * an existing file or package directory count.
 */
function namingWords(command: string, args: readonly string[], env: readonly string[]): string[] {
  const words: string[] = [command];
  const take = (word: string) => {
    if (word === "") return;
    if (!word.startsWith("-")) words.push(word);
    const equals = word.indexOf("=");
    if (equals > 0) take(word.slice(equals + 1));
  };
  for (const arg of args) take(arg);
  for (const value of env) for (const word of value.split(/\s+/)) take(word);
  return words;
}

/**
 * A directory as a program (`node ./server`): Node runs what its package.json `main` names, or
 * its index.js. Those files, and the package.json that picks one, are named by the definition as
 * surely as a file argument. What they import in turn is not (see docs/security.md).
 */
function packageEntry(directory: string): string[] {
  const manifest = path.join(directory, "package.json");
  const entries: string[] = [];
  if (isFile(manifest)) {
    entries.push(manifest);
    const main = mainOf(manifest);
    if (main !== undefined) {
      const target = path.resolve(directory, main);
      for (const file of [
        target,
        `${target}.js`,
        `${target}.mjs`,
        `${target}.cjs`,
        path.join(target, "index.js"),
      ]) {
        if (isFile(file)) {
          entries.push(file);
          break;
        }
      }
    }
  }
  for (const index of ["index.js", "index.mjs", "index.cjs"]) {
    const file = path.join(directory, index);
    if (isFile(file)) entries.push(file);
  }
  return entries;
}

function mainOf(manifest: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(manifest, "utf8"));
    const main =
      typeof parsed === "object" && parsed !== null ? (parsed as { main?: unknown }).main : undefined;
    return typeof main === "string" && main !== "" ? main : undefined;
  } catch {
    return undefined;
  }
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;
  }
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
