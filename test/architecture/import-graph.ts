import { readdirSync, readFileSync } from "node:fs";
import { join, posix, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/**
 * The folder-level import graph of src/ and the check that it is a stack: every folder sits on a
 * floor, and a folder may import only folders on floors below its own. Folders on the same floor
 * are side by side and may not import each other. src/index.ts (the package's entry) and
 * src/engine-entry.ts (its `./engine` entry) each count as a folder of their own.
 */

/** Folder name -> the folders it imports, each with one file-level edge as evidence. */
export type FolderGraph = Map<string, Map<string, string>>;

export interface Violation {
  from: string;
  to: string;
  /** One import that makes the edge, `file -> specifier`. */
  evidence: string;
  problem: string;
}

export const PACKAGE_ENTRY = "index.ts";

/** The package's `"./engine"` entry (the low-level parts), a node of its own beside PACKAGE_ENTRY. */
export const ENGINE_ENTRY = "engine-entry.ts";

/** Every relative import specifier of a module: static, `export ... from`, dynamic `import()`. */
export function importSpecifiers(source: string): string[] {
  const info = ts.preProcessFile(source, true, true);
  return info.importedFiles.map((file) => file.fileName).filter((name) => name.startsWith("."));
}

/**
 * The top-level folder of a path relative to src/ ("tools/files/grep.ts" -> "tools"); a module
 * directly in src/ is the engine entry itself or else part of the package entry.
 */
export function folderOf(pathInSrc: string): string {
  const [first, ...rest] = pathInSrc.split("/");
  if (rest.length === 0) return first === ENGINE_ENTRY ? ENGINE_ENTRY : PACKAGE_ENTRY;
  return first ?? PACKAGE_ENTRY;
}

/** Build the graph from module texts keyed by their path relative to src/ (posix separators). */
export function folderGraph(modules: ReadonlyMap<string, string>): FolderGraph {
  const graph: FolderGraph = new Map();
  for (const [path, source] of modules) {
    const from = folderOf(path);
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const specifier of importSpecifiers(source)) {
      const target = posix.normalize(posix.join(posix.dirname(path), specifier));
      if (target.startsWith("../")) continue; // outside src/ (package.json): not a floor
      const to = folderOf(target);
      if (to !== from && !edges.has(to)) edges.set(to, `src/${path} -> ${specifier}`);
    }
  }
  return graph;
}

/** Every .ts module under a directory, keyed by its path relative to it. */
export function readModules(root: string): Map<string, string> {
  const modules = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts")) {
        modules.set(relative(root, path).split(sep).join("/"), readFileSync(path, "utf8"));
      }
    }
  };
  walk(root);
  return modules;
}

/** Check a graph against floors listed from the top down; returns every broken rule. */
export function checkStack(graph: FolderGraph, floors: readonly (readonly string[])[]): Violation[] {
  const level = new Map<string, number>();
  floors.forEach((floor, index) => {
    for (const folder of floor) level.set(folder, floors.length - index);
  });
  const violations: Violation[] = [];
  for (const [from, edges] of graph) {
    if (!level.has(from)) {
      violations.push({ from, to: from, evidence: "", problem: `src/${from} is on no floor of the stack` });
      continue;
    }
    for (const [to, evidence] of edges) {
      const own = level.get(from) ?? 0;
      const other = level.get(to);
      if (other === undefined) {
        violations.push({ from, to, evidence, problem: `${to} is on no floor of the stack` });
      } else if (other === own) {
        violations.push({ from, to, evidence, problem: `${from} imports ${to}, which sits beside it` });
      } else if (other > own) {
        violations.push({ from, to, evidence, problem: `${from} imports ${to}, a floor above it` });
      }
    }
  }
  return violations;
}

/** A cycle of folders (first folder repeated at the end), or undefined when there is none. */
export function findCycle(graph: FolderGraph): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (folder: string): string[] | undefined => {
    if (state.get(folder) === "done") return undefined;
    if (state.get(folder) === "open") return [...path.slice(path.indexOf(folder)), folder];
    state.set(folder, "open");
    path.push(folder);
    for (const next of graph.get(folder)?.keys() ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(folder, "done");
    return undefined;
  };
  for (const folder of graph.keys()) {
    const cycle = visit(folder);
    if (cycle) return cycle;
  }
  return undefined;
}

export const SRC = fileURLToPath(new URL("../../src", import.meta.url));
