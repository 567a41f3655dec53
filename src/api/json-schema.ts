import { z } from "zod";
import { PROTOCOL_VERSION } from "./common.js";
import { METHODS } from "./methods.js";
import { NOTIFICATIONS } from "./notifications.js";

/**
 * The protocol as one JSON Schema document, generated from the zod schemas (the only definition):
 * `schema/protocol.schema.json` holds it, committed, so clients in other languages can generate
 * code from it and `compat.ts` can tell whether a change breaks the clients of an earlier version.
 * Each method's params and result and each notification's params are a schema of their own;
 * shared pieces are written out in place (no `$ref`), which keeps the document easy to compare.
 */

export const SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema";

export interface ProtocolSchema {
  $schema: string;
  title: string;
  "x-protocol-version": number;
  methods: Record<string, { params: JsonSchema; result: JsonSchema }>;
  notifications: Record<string, JsonSchema>;
}

export type JsonSchema = { [key: string]: unknown };

function toSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: "throw",
  }) as JsonSchema;
  return rest;
}

export function protocolJsonSchema(): ProtocolSchema {
  return {
    $schema: SCHEMA_DIALECT,
    title: `harness server protocol, version ${PROTOCOL_VERSION} (JSON-RPC 2.0, one message per line)`,
    "x-protocol-version": PROTOCOL_VERSION,
    methods: Object.fromEntries(
      Object.entries(METHODS).map(([name, method]) => [
        name,
        // Params as a client may write them, results as a server sends them.
        { params: toSchema(method.params, "input"), result: toSchema(method.result, "output") },
      ]),
    ),
    notifications: Object.fromEntries(
      Object.entries(NOTIFICATIONS).map(([name, params]) => [name, toSchema(params, "output")]),
    ),
  };
}

/** The document as committed: two-space indented, one trailing newline. */
export function protocolJsonSchemaText(): string {
  return `${JSON.stringify(protocolJsonSchema(), null, 2)}\n`;
}
