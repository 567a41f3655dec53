import { CodedError } from "../shared/coded-error.js";
import { type McpToolInfo, toolInfo } from "./tool-info.js";

/**
 * Listing a server's tools, bounded: a server is foreign input and its tool list goes into every
 * model request, so how many tools it may list, how large their definitions may be together, how
 * many pages it may take and how long the whole listing may last are all capped. A listing past a
 * bound is refused as a whole (never cut to a prefix the server chose): the server then offers no
 * tools, with the reason.
 */

/** The most tools one server may list. */
export const MAX_TOOLS_PER_SERVER = 1_000;
/** The most bytes (JSON text) one server's tool definitions may take together. */
export const MAX_SURFACE_BYTES_PER_SERVER = 4 * 1024 * 1024;
/** The most bytes every server's tool definitions may take together in one session. */
export const MAX_SURFACE_BYTES_TOTAL = 8 * 1024 * 1024;
/** The most pages a listing may take. */
export const MAX_LIST_PAGES = 64;

/** A server's tool list that harness refused: it exceeded a bound (`reason` says which). */
export class McpListingRefused extends CodedError<"MCP_LISTING_REFUSED"> {
  override readonly name = "McpListingRefused";
  constructor(
    readonly server: string,
    readonly reason: string,
  ) {
    super("MCP_LISTING_REFUSED", `MCP server "${server}": its tool list was refused: ${reason}`);
  }
}

/** One page of `tools/list` as the SDK returns it. */
export interface ToolPage {
  tools: readonly unknown[];
  nextCursor?: string | undefined;
}

export interface ListingLimits {
  maxTools: number;
  /** Bytes the listing may use (the server's bound, or what is left of every server's together). */
  maxBytes: number;
  /** Whether the byte bound is the one shared by every server (for the reason). */
  sharedBytes: boolean;
  maxPages: number;
  /** How long the whole listing may take. */
  deadlineMs: number;
}

/**
 * Walk the pages through `fetchPage` (given the cursor, or none for the first, and the signal that
 * ends the request at the deadline) and return every tool, or throw McpListingRefused at the first
 * bound passed. Errors of `fetchPage` other than the deadline's are passed on.
 */
export async function listBounded(
  server: string,
  fetchPage: (cursor: string | undefined, signal: AbortSignal, timeoutMs: number) => Promise<ToolPage>,
  limits: ListingLimits,
  signal?: AbortSignal,
): Promise<{ tools: McpToolInfo[]; bytes: number }> {
  const began = performance.now();
  const deadline = AbortSignal.timeout(limits.deadlineMs);
  const ends = signal === undefined ? deadline : AbortSignal.any([deadline, signal]);
  const refuse = (reason: string) => new McpListingRefused(server, reason);
  const tools: McpToolInfo[] = [];
  let bytes = 0;
  let cursor: string | undefined;
  for (let pages = 0; ; pages += 1) {
    if (pages >= limits.maxPages)
      throw refuse(`it took more than ${limits.maxPages} pages (the most a listing may take)`);
    const remaining = Math.max(1, Math.round(limits.deadlineMs - (performance.now() - began)));
    let page: ToolPage;
    try {
      page = await fetchPage(cursor, ends, remaining);
    } catch (error) {
      if (deadline.aborted || performance.now() - began >= limits.deadlineMs)
        throw refuse(`listing did not finish within ${limits.deadlineMs} ms`);
      throw error;
    }
    if (tools.length + page.tools.length > limits.maxTools)
      throw refuse(`it lists more than ${limits.maxTools} tools (the most one server may offer)`);
    for (const raw of page.tools) {
      bytes += Buffer.byteLength(JSON.stringify(raw) ?? "");
      if (bytes > limits.maxBytes)
        throw refuse(
          limits.sharedBytes
            ? `with it, the tool definitions of every server together would exceed ${MAX_SURFACE_BYTES_TOTAL} bytes (the most a session offers)`
            : `its tool definitions exceed ${limits.maxBytes} bytes (the most one server's may take)`,
        );
      tools.push(toolInfo(raw as Record<string, unknown>));
    }
    if (page.nextCursor === undefined) return { tools, bytes };
    cursor = page.nextCursor;
  }
}
