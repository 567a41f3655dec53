/** A tool as the server described it, unmodified (all pages of tools/list). */
export interface McpToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** The fields harness uses of one tools/list entry, as the server sent them. */
export function toolInfo(tool: Record<string, unknown>): McpToolInfo {
  const info: McpToolInfo = {
    name: String(tool.name),
    inputSchema: (tool.inputSchema ?? { type: "object" }) as Record<string, unknown>,
  };
  if (typeof tool.title === "string") info.title = tool.title;
  if (typeof tool.description === "string") info.description = tool.description;
  if (isRecord(tool.outputSchema)) info.outputSchema = tool.outputSchema;
  if (isRecord(tool.annotations)) info.annotations = tool.annotations;
  return info;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
