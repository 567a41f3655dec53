import { z } from "zod";
import { once } from "../../shared/lazy-record.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { defineTool, type ToolContext, type ToolOutput } from "../tool.js";

export const TOOL_SEARCH = "tool_search";
export const DEFAULT_SEARCH_LIMIT = 5;
export const MAX_SEARCH_LIMIT = 20;

const input = once(() =>
  z.strictObject({
    query: z.string().trim().min(1).max(500),
    limit: z.number().int().min(1).max(MAX_SEARCH_LIMIT).optional(),
  }),
);

/**
 * `tool_search {query, limit?}`: offered only while some of the session's tools are deferred (their
 * definitions are not sent up front). It ranks the tools this session may discover by name,
 * description and parameter names, and loads the matches: their definitions are offered from the
 * next request. Finding a tool grants nothing; a call to it is authorized when it is made.
 */
export const toolSearchTool = defineTool({
  name: TOOL_SEARCH,
  description:
    "Find tools that are not loaded yet and load them. Most tools' definitions are not shown up front; " +
    "describe what you need (words from the task, a service name, a tool name) and the best matches are " +
    "listed with one line each and loaded: call them from your next step. Searching for a tool's exact " +
    "name loads that tool (again, if its definition changed). A tool that is not found may still exist " +
    "under other words; a tool the session may not use is never found.",
  version: "1",
  get input() {
    return input();
  },
  modelSchema: INPUT_SCHEMAS.tool_search,
  effect: "read_only",
  idempotency: "idempotent",
  timeoutMs: 10_000,
  resources: () => ({ read: [], write: [] }),
  concurrencySafe: () => true,
  catalogs: true,
  // Interrupted, it is searched again: the same query over the same catalog finds the same tools,
  // and what the interrupted call had already loaded (journaled) is not loaded twice.
  reconcile(args, context) {
    return search(args, context);
  },
  execute(args, context) {
    return search(args, context);
  },
});

async function search(args: z.output<ReturnType<typeof input>>, context: ToolContext): Promise<ToolOutput> {
  const catalog = context.catalog;
  if (catalog === undefined)
    throw new ToolError("RUNTIME_EXCEPTION", "tool_search is not available: no tools are deferred");
  const found = await catalog.search(args.query, args.limit ?? DEFAULT_SEARCH_LIMIT, context.callId);
  if (found.tools.length === 0) {
    return {
      summary: `no tool matched "${args.query}"`,
      content: `No tool matched "${args.query}". Try other words (what the tool acts on, its service).`,
      data: { tools: [], loaded: [] },
    };
  }
  const lines = found.tools.map((tool) => `- ${tool.name}: ${tool.description}`);
  return {
    summary: `${found.tools.length} tool(s) found, ${found.loaded.length} loaded`,
    content:
      `${lines.join("\n")}\n` +
      "These tools are loaded: call them from your next step (their full definitions are offered then).",
    data: { tools: found.tools.map((tool) => ({ ...tool })), loaded: [...found.loaded] },
  };
}
