import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createEditFileTool,
  createFileTools,
  createGlobTool,
  createGrepTool,
  createReadArtifactTool,
  createReadFileTool,
  createWriteFileTool,
} from "../../src/tools/builtin.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { Session } from "./helpers.js";

const tools = createFileTools();

describe("built-in file tools", () => {
  it("come in a fixed order, at version 1", () => {
    expect(tools.map((tool) => tool.name)).toEqual([
      "read_file",
      "write_file",
      "edit_file",
      "glob",
      "grep",
      "read_artifact",
    ]);
    expect(tools.every((tool) => tool.version === "1")).toBe(true);
    expect(createFileTools().map((tool) => z.toJSONSchema(tool.input, { io: "input" }))).toEqual(
      tools.map((tool) => z.toJSONSchema(tool.input, { io: "input" })),
    );
  });

  it.each(tools.map((tool) => [tool.name, tool] as const))(
    "%s has a strict, fully described JSON Schema and a model-facing description",
    (_name, tool) => {
      const schema = z.toJSONSchema(tool.input, { io: "input" }) as {
        type: string;
        additionalProperties: boolean;
        properties: Record<string, { description?: string }>;
      };
      expect(schema.type).toBe("object");
      expect(schema.additionalProperties).toBe(false);
      for (const [field, property] of Object.entries(schema.properties)) {
        expect(property.description, field).toMatch(/\w{3,}/);
      }
      expect(tool.description.length).toBeGreaterThan(200);
      expect(tool.description).toMatch(/Fails with|Fails without/);
    },
  );

  it.each([true, "2", 1.5, 0, -1, 2001, Number.NaN, null])("read_file refuses limit %j", (limit) => {
    expect(createReadFileTool().input.safeParse({ path: "a.txt", limit }).success).toBe(false);
  });

  it.each([true, "2", 1.5, 0, -3])("read_file refuses offset %j", (offset) => {
    expect(createReadFileTool().input.safeParse({ path: "a.txt", offset }).success).toBe(false);
  });

  it("refuses extra fields, empty paths and wrong types on every tool", () => {
    expect(createReadFileTool().input.safeParse({ path: "a.txt", encoding: "gbk" }).success).toBe(false);
    expect(createReadFileTool().input.safeParse({ path: "" }).success).toBe(false);
    expect(createWriteFileTool().input.safeParse({ path: "a", content: "x", mode: 420 }).success).toBe(false);
    expect(createWriteFileTool().input.safeParse({ path: "a", content: 5 }).success).toBe(false);
    expect(
      createWriteFileTool().input.safeParse({ path: "a", content: "", expected_version: "abc" }).success,
    ).toBe(false);
    expect(createEditFileTool().input.safeParse({ path: "a", old_text: "", new_text: "x" }).success).toBe(
      false,
    );
    expect(
      createEditFileTool().input.safeParse({ path: "a", old_text: "x", new_text: "y", line: 3 }).success,
    ).toBe(false);
    expect(
      createEditFileTool().input.safeParse({ path: "a", old_text: "x", new_text: "y", replace_all: "true" })
        .success,
    ).toBe(false);
    expect(createGlobTool().input.safeParse({ pattern: "*", extra: 1 }).success).toBe(false);
    expect(createGrepTool().input.safeParse({ pattern: "x", max_results: 2001 }).success).toBe(false);
    expect(createGrepTool().input.safeParse({ pattern: "x", max_results: "10" }).success).toBe(false);
    expect(createReadArtifactTool().input.safeParse({ id: "not-hex" }).success).toBe(false);
    expect(createReadArtifactTool().input.safeParse({ id: "a".repeat(64), offset: 1.5 }).success).toBe(false);
  });

  it("accepts content and new_text that are empty", () => {
    expect(createWriteFileTool().input.safeParse({ path: "a", content: "" }).success).toBe(true);
    expect(createEditFileTool().input.safeParse({ path: "a", old_text: "x", new_text: "" }).success).toBe(
      true,
    );
  });

  it("declares resources from the arguments and which calls may run together", () => {
    const [readFile, writeFile, editFile, glob, grep, readArtifact] = tools;
    expect(readFile?.resources({ path: "./src//a.ts" })).toEqual({ read: ["file:src/a.ts"], write: [] });
    expect(writeFile?.resources({ path: "b.ts", content: "" })).toEqual({ read: [], write: ["file:b.ts"] });
    expect(editFile?.resources({ path: "../x", old_text: "a", new_text: "b" })).toEqual({
      read: [],
      write: ["file:../x"],
    });
    expect(glob?.resources({ pattern: "*" })).toEqual({ read: ["file:."], write: [] });
    expect(grep?.resources({ pattern: "x", path: "src" })).toEqual({ read: ["file:src"], write: [] });
    expect(readArtifact?.resources({ id: "a".repeat(64) })).toEqual({
      read: [`artifact:${"a".repeat(64)}`],
      write: [],
    });
    expect(tools.map((tool) => tool.concurrencySafe({}))).toEqual([true, false, false, true, true, true]);
    expect(tools.map((tool) => tool.effect)).toEqual([
      "read_only",
      "local_write",
      "local_write",
      "read_only",
      "read_only",
      "read_only",
    ]);
  });

  it("semantic validation refuses what the schema cannot express", () => {
    expect(() => createWriteFileTool().validate?.({ path: "a", content: "\udc00" })).toThrow(/surrogate/);
    expect(() => createGrepTool().validate?.({ pattern: "[" })).toThrow(/regular expression/);
  });

  it("do nothing when the schema refuses the arguments", async () => {
    const fs = new MemoryWorkspaceFs({ "a.txt": "keep" });
    const session = new Session(fs);
    await expect(
      session.run(createWriteFileTool(), { path: "a.txt", content: "x", force: true }),
    ).rejects.toThrow();
    expect(fs.snapshot()).toEqual({ "a.txt": new TextEncoder().encode("keep") });
  });
});
