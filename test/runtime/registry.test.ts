import { describe, expect, it } from "vitest";
import { z } from "zod";
import { RegistrationError, ToolRegistry } from "../../src/runtime/registry.js";
import { createFileTools, createProgramTools } from "../../src/tools/builtin.js";
import { selectTools, TOOL_PROFILES } from "../../src/tools/profiles.js";
import { BackgroundProcesses } from "../../src/tools/shell/background.js";
import { createProcessTools } from "../../src/tools/shell/process-tools.js";
import { createShellTool } from "../../src/tools/shell/shell.js";
import { type AnyTool, defineTool } from "../../src/tools/tool.js";

const base = {
  name: "echo_text",
  description: "Returns the text it was given; used to test the registry's checks.",
  version: "1",
  input: z.strictObject({ text: z.string() }),
  effect: "pure" as const,
  idempotency: "pure" as const,
  timeoutMs: 1000,
  resources: () => ({ read: [], write: [] }),
  concurrencySafe: () => true,
  execute: async (args: { text: string }) => ({ summary: args.text, content: args.text }),
};

describe("tool registry", () => {
  it("registers a complete tool and exposes its JSON Schema from the same Zod object", () => {
    const snapshot = new ToolRegistry().register(defineTool(base)).snapshot();
    expect(snapshot.specs).toEqual([
      {
        name: "echo_text",
        description: base.description,
        input_schema: {
          type: "object",
          properties: { text: { type: "string" } },
          required: ["text"],
          additionalProperties: false,
        },
      },
    ]);
    expect(snapshot.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it.each([
    ["no effect class", { effect: undefined }],
    ["an unknown effect class", { effect: "dangerous" }],
    ["no idempotency", { idempotency: undefined }],
    ["no version", { version: "" }],
    ["no timeout", { timeoutMs: 0 }],
    ["no resources function", { resources: undefined }],
    ["no concurrency declaration", { concurrencySafe: undefined }],
    ["no description for the model", { description: "reads" }],
    ["an invalid name", { name: "Read File" }],
    ["a name longer than 64 characters", { name: `a${"b".repeat(64)}` }],
    ["a name starting with a digit", { name: "1tool" }],
    ["a schema that is not a strict object", { input: z.object({ text: z.string() }) }],
  ])("refuses a tool with %s", (_what, change) => {
    const tool = { ...base, ...change } as unknown as AnyTool;
    expect(() => new ToolRegistry().register(tool)).toThrow(RegistrationError);
  });

  it("publishes a foreign tool's own JSON Schema to the model, as a copy, instead of one from Zod", () => {
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { query: { type: "string", minLength: 1 } },
      required: ["query"],
    };
    const foreign = defineTool({
      ...base,
      name: "mcp__GitHub__search-issues",
      input: z.unknown(),
      inputSchema: schema,
    });
    const snapshot = new ToolRegistry().register(foreign).snapshot();
    schema.properties.query.minLength = 99;
    expect(snapshot.specs).toEqual([
      {
        name: "mcp__GitHub__search-issues",
        description: base.description,
        input_schema: {
          $schema: "http://json-schema.org/draft-07/schema#",
          type: "object",
          properties: { query: { type: "string", minLength: 1 } },
          required: ["query"],
        },
      },
    ]);
    const other = defineTool({ ...foreign, inputSchema: { ...schema, required: [] } });
    expect(new ToolRegistry().register(other).snapshot().digest).not.toBe(snapshot.digest);
  });

  it("refuses a published schema that is not an object schema", () => {
    const tool = defineTool({ ...base, input: z.unknown(), inputSchema: { type: "string" } });
    expect(() => new ToolRegistry().register(tool)).toThrow(/must be an object schema/);
  });

  it("refuses a second tool with the same name", () => {
    const registry = new ToolRegistry().register(defineTool(base));
    expect(() => registry.register(defineTool(base))).toThrow(/already registered/);
  });

  it("keeps registration order, and the snapshot does not change when the registry does", () => {
    const registry = new ToolRegistry();
    for (const tool of createFileTools()) registry.register(tool);
    const snapshot = registry.snapshot();
    registry.register(defineTool(base));
    expect(snapshot.names).toEqual(["read_file", "write_file", "edit_file", "glob", "grep", "read_artifact"]);
    expect(Object.isFrozen(snapshot.specs)).toBe(true);
    const again = new ToolRegistry();
    for (const tool of createFileTools()) again.register(tool);
    expect(again.snapshot().digest).toBe(snapshot.digest);
    expect(registry.snapshot().digest).not.toBe(snapshot.digest);
  });

  it("selects tool profiles in their fixed order", () => {
    const all = [
      ...createFileTools(),
      ...createProgramTools(),
      createShellTool({ sandbox: { profile: "none" } }),
      ...createProcessTools(new BackgroundProcesses()),
    ];
    for (const [profile, names] of Object.entries(TOOL_PROFILES)) {
      expect(selectTools(profile, all).map((t) => t.name)).toEqual([...names]);
    }
    expect(selectTools("grep,read_file", all).map((t) => t.name)).toEqual(["grep", "read_file"]);
    expect(() => selectTools("read_file,nope", all)).toThrow(/unknown tool/);
    expect(() => selectTools("read_file,read_file", all)).toThrow(/twice/);
  });
});
