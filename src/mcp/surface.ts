import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";

/**
 * The tool surface of MCP servers: what the model was offered of each server's tools, in a form
 * the journal keeps (snake_case JSON) and resume compares. A change of a server's tools (a new or
 * removed tool, a changed schema, description or annotations) is a change of the surface; the
 * digest names a whole surface, the diff says what changed.
 */

/** One exposed tool of a server. */
export interface SurfaceTool extends JsonObject {
  server: string;
  /** The name the model calls it by. */
  name: string;
  /** The name on the wire. */
  raw_name: string;
  /** SHA-256 of the RFC 8785 canonical JSON of the input schema as the server sent it. */
  input_schema_sha256: string;
  /** SHA-256 of the description as the server sent it ("" when none): the model reads it too. */
  description_sha256: string;
  /** The behaviour hints the server declared (only the known ones), as sent. */
  annotations: JsonObject;
}

/** One server's exposed tools, sorted by exposed name, and their digest. */
export interface ServerSurface extends JsonObject {
  server: string;
  tools: SurfaceTool[];
  digest: string;
}

export interface SurfaceChange {
  before: SurfaceTool;
  after: SurfaceTool;
  /** Which facts differ: "name", "input_schema", "description", "annotations". */
  fields: string[];
}

export interface SurfaceDiff {
  added: SurfaceTool[];
  removed: SurfaceTool[];
  changed: SurfaceChange[];
}

/** The surface entry of one tool, from what the server listed and the name it was given. */
export function surfaceTool(tool: {
  server: string;
  name: string;
  rawName: string;
  inputSchema: unknown;
  description: string | undefined;
  annotations: JsonObject;
}): SurfaceTool {
  return {
    server: tool.server,
    name: tool.name,
    raw_name: tool.rawName,
    input_schema_sha256: digestOf(tool.inputSchema),
    description_sha256: digestOf(tool.description ?? ""),
    annotations: tool.annotations,
  };
}

/** A server's surface: its tools in exposed-name order (listing order does not matter). */
export function serverSurface(server: string, tools: readonly SurfaceTool[]): ServerSurface {
  const sorted = tools
    .filter((tool) => tool.server === server)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { server, tools: sorted, digest: digestOf({ server, tools: sorted }) };
}

/** The digest of several servers' surfaces, whatever their order. */
export function surfaceDigest(surfaces: readonly ServerSurface[]): string {
  return digestOf(
    [...surfaces]
      .sort((a, b) => (a.server < b.server ? -1 : a.server > b.server ? 1 : 0))
      .map((surface) => ({ server: surface.server, digest: surface.digest })),
  );
}

/** What changed from one surface to another, tools identified by server and raw name. */
export function diffSurfaces(before: readonly SurfaceTool[], after: readonly SurfaceTool[]): SurfaceDiff {
  const key = (tool: SurfaceTool) => `${tool.server}\u0000${tool.raw_name}`;
  const old = new Map(before.map((tool) => [key(tool), tool]));
  const now = new Map(after.map((tool) => [key(tool), tool]));
  const diff: SurfaceDiff = { added: [], removed: [], changed: [] };
  for (const [id, tool] of now) {
    const previous = old.get(id);
    if (previous === undefined) {
      diff.added.push(tool);
      continue;
    }
    const fields = changedFields(previous, tool);
    if (fields.length > 0) diff.changed.push({ before: previous, after: tool, fields });
  }
  for (const [id, tool] of old) if (!now.has(id)) diff.removed.push(tool);
  return diff;
}

export function isEmptyDiff(diff: SurfaceDiff): boolean {
  return diff.added.length === 0 && diff.removed.length === 0 && diff.changed.length === 0;
}

/** One line per change, for a refusal or a notice (names are JSON-quoted: they are the server's). */
export function describeSurfaceDiff(diff: SurfaceDiff): string[] {
  const label = (tool: SurfaceTool) =>
    `${JSON.stringify(tool.name)} of server ${JSON.stringify(tool.server)}`;
  return [
    ...diff.added.map((tool) => `added ${label(tool)}`),
    ...diff.removed.map((tool) => `removed ${label(tool)}`),
    ...diff.changed.map((change) => `changed ${label(change.after)}: ${change.fields.join(", ")}`),
  ];
}

function changedFields(a: SurfaceTool, b: SurfaceTool): string[] {
  const fields: string[] = [];
  if (a.name !== b.name) fields.push("name");
  if (a.input_schema_sha256 !== b.input_schema_sha256) fields.push("input_schema");
  if (a.description_sha256 !== b.description_sha256) fields.push("description");
  if (digestOf(a.annotations) !== digestOf(b.annotations)) fields.push("annotations");
  return fields;
}
