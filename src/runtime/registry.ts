import { z } from "zod";
import type { ToolSpec } from "../protocol/types.js";
import { digestOf } from "../shared/hash.js";
import { isJsonObject, type JsonObject } from "../shared/json.js";
import type { AnyTool } from "../tools/tool.js";

// What every provider accepts as a tool name (MCP tools keep their servers' upper case and '-').
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const EFFECTS = new Set([
  "pure",
  "read_only",
  "local_write",
  "process_execution",
  "network_read",
  "network_write",
  "external_side_effect",
  "destructive",
]);
const IDEMPOTENCY = new Set(["pure", "idempotent", "conditionally_idempotent", "non_idempotent"]);

export class RegistrationError extends Error {
  override readonly name = "RegistrationError";
}

/** A tool together with what the model was shown of it. */
export interface SnapshotEntry {
  tool: AnyTool;
  spec: ToolSpec;
  /** Digest of the model-visible definition (name, description, schema) plus version. */
  schemaDigest: string;
}

/**
 * An immutable view of the tool set for one session: order and content never change, so the
 * model-visible prefix stays stable and every call is interpreted against what the model saw.
 */
export class ToolSnapshot {
  readonly entries: readonly SnapshotEntry[];
  readonly specs: readonly ToolSpec[];
  readonly digest: string;
  private readonly byName: ReadonlyMap<string, SnapshotEntry>;

  constructor(entries: SnapshotEntry[]) {
    this.entries = Object.freeze([...entries]);
    this.specs = Object.freeze(entries.map((e) => e.spec));
    this.byName = new Map(entries.map((e) => [e.tool.name, e]));
    this.digest = digestOf(
      entries.map((e) => ({ spec: e.spec, version: e.tool.version, effect: e.tool.effect })),
    );
  }

  get(name: string): SnapshotEntry | undefined {
    return this.byName.get(name);
  }

  get names(): string[] {
    return this.entries.map((e) => e.tool.name);
  }

  /** The subset in snapshot order; unknown names are an error. */
  select(names: readonly string[]): ToolSnapshot {
    for (const name of names)
      if (!this.byName.has(name)) throw new RegistrationError(`unknown tool "${name}"`);
    const wanted = new Set(names);
    return new ToolSnapshot(this.entries.filter((e) => wanted.has(e.tool.name)));
  }
}

/** Keeps tools in registration order and refuses any without complete metadata. */
export class ToolRegistry {
  private readonly entries: SnapshotEntry[] = [];

  register(tool: AnyTool): this {
    checkMetadata(tool);
    if (this.entries.some((e) => e.tool.name === tool.name)) {
      throw new RegistrationError(`tool "${tool.name}" is already registered`);
    }
    const inputSchema = modelSchema(tool);
    const spec: ToolSpec = { name: tool.name, description: tool.description, input_schema: inputSchema };
    this.entries.push({ tool, spec, schemaDigest: digestOf({ spec, version: tool.version }) });
    return this;
  }

  snapshot(): ToolSnapshot {
    return new ToolSnapshot(this.entries);
  }
}

/**
 * The JSON Schema the model sees: the one a built-in tool carries from the build (`modelSchema`),
 * the one converted from the tool's Zod input, or the foreign schema the tool publishes (copied,
 * so a later change to the tool's object cannot change the snapshot). A built-in or converted
 * schema is shared by every session of the process (frozen, so no session can change another's).
 */
function modelSchema(tool: AnyTool): JsonObject {
  if (tool.inputSchema !== undefined) {
    if (!isJsonObject(tool.inputSchema) || tool.inputSchema.type !== "object") {
      throw new RegistrationError(`tool "${tool.name}": the published input schema must be an object schema`);
    }
    return structuredClone(tool.inputSchema);
  }
  // A built-in's Zod input is not read here: it may be built only when the tool is first called.
  const inputSchema = tool.modelSchema !== undefined ? deepFreeze(tool.modelSchema) : convertOnce(tool.input);
  if (inputSchema.type !== "object" || inputSchema.additionalProperties !== false) {
    throw new RegistrationError(`tool "${tool.name}": the input schema must be a strict object`);
  }
  return inputSchema;
}

/**
 * Each Zod input's JSON Schema, made once per process: converting costs milliseconds of CPU and
 * about a megabyte of garbage per session, and a server or worker hosts many sessions.
 */
const converted = new WeakMap<AnyTool["input"], JsonObject>();

function convertOnce(input: AnyTool["input"]): JsonObject {
  let schema = converted.get(input);
  if (schema === undefined) {
    schema = deepFreeze(inputJsonSchema(input));
    converted.set(input, schema);
  }
  return schema;
}

/**
 * The JSON Schema of a Zod input as the model is sent it (no `$schema` dialect line). Built-in
 * tools carry theirs from the build (src/tools/input-schemas.generated.ts, written and kept
 * equal to this by test/tools/input-schemas.test.ts).
 */
export function inputJsonSchema(input: AnyTool["input"]): JsonObject {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(input, { io: "input" }) as JsonObject;
  return schema;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function checkMetadata(tool: AnyTool): void {
  const where = `tool "${String(tool?.name)}"`;
  if (typeof tool.name !== "string" || !NAME.test(tool.name))
    throw new RegistrationError(`${where}: invalid name`);
  if (typeof tool.description !== "string" || tool.description.trim().length < 20) {
    throw new RegistrationError(`${where}: a description for the model is required`);
  }
  if (typeof tool.version !== "string" || tool.version.length === 0)
    throw new RegistrationError(`${where}: version required`);
  if (!EFFECTS.has(tool.effect))
    throw new RegistrationError(`${where}: unknown effect class "${tool.effect}"`);
  if (!IDEMPOTENCY.has(tool.idempotency))
    throw new RegistrationError(`${where}: unknown idempotency "${tool.idempotency}"`);
  if (!Number.isInteger(tool.timeoutMs) || tool.timeoutMs <= 0)
    throw new RegistrationError(`${where}: timeoutMs required`);
  if (typeof tool.resources !== "function") throw new RegistrationError(`${where}: resources(args) required`);
  if (typeof tool.concurrencySafe !== "function")
    throw new RegistrationError(`${where}: concurrencySafe(args) required`);
  if (typeof tool.execute !== "function") throw new RegistrationError(`${where}: execute required`);
}
