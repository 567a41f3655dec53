import { describe, expect, it } from "vitest";
import {
  checkStack,
  ENGINE_ENTRY,
  type FolderGraph,
  findCycle,
  folderGraph,
  importSpecifiers,
  PACKAGE_ENTRY,
  readModules,
  SRC,
} from "./import-graph.js";

/**
 * The stack, top floor first (docs/architecture.md draws it). A folder imports only folders on
 * floors below its own; folders on one floor stand side by side and never import each other.
 * A new folder under src/ must be placed here before anything can import it.
 */
const STACK: readonly (readonly string[])[] = [
  ["cli"],
  // The in-repo embedding example uses the package as a caller does: through its entry only.
  ["examples"],
  ["eval", "mcp-server", "ui", "fleet", "server", "acp", PACKAGE_ENTRY, ENGINE_ENTRY],
  ["session"],
  ["engine"],
  ["packs", "proposals", "policy", "config", "undo"],
  ["runtime"],
  ["mcp"],
  ["tools", "otel"],
  ["journal", "providers", "sandbox", "client", "viewer"],
  ["protocol", "workspace", "artifacts", "rules", "api", "network"],
  ["shared"],
];

describe("the import graph of src/", () => {
  const graph = folderGraph(readModules(SRC));

  it("runs down the declared stack only", () => {
    expect(checkStack(graph, STACK)).toEqual([]);
  });

  it("has no cycle between folders", () => {
    expect(findCycle(graph)).toBeUndefined();
  });

  it("lets the examples import the package entry only, as a program embedding harness does", () => {
    expect([...(graph.get("examples")?.entries() ?? [])]).toEqual([[PACKAGE_ENTRY, expect.any(String)]]);
  });

  it("places every folder of src/ on the stack exactly once", () => {
    const placed = STACK.flat();
    expect(new Set(placed).size).toBe(placed.length);
    expect([...graph.keys()].sort()).toEqual([...placed].sort());
  });
});

describe("the check itself", () => {
  const planted = (edges: Record<string, string[]>): FolderGraph =>
    new Map(
      Object.entries(edges).map(([from, tos]) => [from, new Map(tos.map((to) => [to, `src/${from}/x.ts`]))]),
    );

  it("reads static, re-export, type-only and dynamic imports, and ignores packages", () => {
    const source = [
      'import { a } from "./a.js";',
      'import type { B } from "../b/b.js";',
      'export { c } from "../../c.js";',
      'export * from "./d.js";',
      'const e = await import("../e/e.js");',
      'import { z } from "zod";',
      'import { readFile } from "node:fs/promises";',
    ].join("\n");
    expect(importSpecifiers(source)).toEqual(["./a.js", "../b/b.js", "../../c.js", "./d.js", "../e/e.js"]);
  });

  it("maps modules to folders, src/index.ts being the package entry and src/engine-entry.ts its own", () => {
    const graph = folderGraph(
      new Map([
        ["index.ts", 'export * from "./engine/engine.js";'],
        ["engine-entry.ts", 'export * from "./tools/files/grep.js";'],
        ["engine/engine.ts", 'import "../tools/files/grep.js";\nimport "./state.js";'],
        ["tools/files/grep.ts", 'import "../tool.js";'],
      ]),
    );
    expect(Object.fromEntries([...graph].map(([folder, edges]) => [folder, [...edges.keys()]]))).toEqual({
      [PACKAGE_ENTRY]: ["engine"],
      [ENGINE_ENTRY]: ["tools"],
      engine: ["tools"],
      tools: [],
    });
  });

  it("fails on an import that runs up a floor, between neighbours, or to an unplaced folder", () => {
    const floors = [["top"], ["left", "right"], ["bottom"]];
    expect(checkStack(planted({ top: ["left", "bottom"], left: ["bottom"] }), floors)).toEqual([]);
    const problems = checkStack(
      planted({ bottom: ["top"], left: ["right"], right: ["nowhere"], stray: [] }),
      floors,
    ).map((v) => v.problem);
    expect(problems).toEqual([
      "bottom imports top, a floor above it",
      "left imports right, which sits beside it",
      "nowhere is on no floor of the stack",
      "src/stray is on no floor of the stack",
    ]);
  });

  it("finds a cycle", () => {
    expect(findCycle(planted({ a: ["b"], b: ["c"], c: ["a"] }))).toEqual(["a", "b", "c", "a"]);
    expect(findCycle(planted({ a: ["b"], b: ["c"], c: [] }))).toBeUndefined();
  });

  it("fails on a violation planted in the real graph", () => {
    const graph = folderGraph(readModules(SRC));
    graph.get("sandbox")?.set("tools", "src/sandbox/planted.ts -> ../tools/tool.js");
    expect(checkStack(graph, STACK)).toEqual([
      {
        from: "sandbox",
        to: "tools",
        evidence: "src/sandbox/planted.ts -> ../tools/tool.js",
        problem: "sandbox imports tools, a floor above it",
      },
    ]);
  });
});
