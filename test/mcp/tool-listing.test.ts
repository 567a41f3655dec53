import { describe, expect, it } from "vitest";
import {
  type ListingLimits,
  listBounded,
  McpListingRefused,
  type ToolPage,
} from "../../src/mcp/tool-listing.js";

const limits: ListingLimits = {
  maxTools: 10,
  maxBytes: 2_000,
  sharedBytes: false,
  maxPages: 4,
  deadlineMs: 2_000,
};
const tool = (name: string, size = 10) => ({
  name,
  inputSchema: { type: "object" },
  description: "d".repeat(size),
});

async function refusal(pages: (cursor: string | undefined) => Promise<ToolPage>, bounds = limits) {
  return listBounded("s", (cursor) => pages(cursor), bounds).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("listBounded", () => {
  it("walks the pages and returns every tool within the bounds", async () => {
    const { tools } = await listBounded(
      "s",
      async (cursor) =>
        cursor === undefined ? { tools: [tool("a")], nextCursor: "2" } : { tools: [tool("b")] },
      limits,
    );
    expect(tools.map((t) => t.name)).toEqual(["a", "b"]);
  });

  it("refuses the whole listing past the tool count, without cutting it", async () => {
    const error = await refusal(async () => ({ tools: Array.from({ length: 11 }, (_, i) => tool(`t${i}`)) }));
    expect(error).toBeInstanceOf(McpListingRefused);
    expect((error as McpListingRefused).reason).toMatch(/more than 10 tools/);
  });

  it("refuses past the bytes, the server's own or what is left of every server's", async () => {
    const big = async () => ({ tools: [tool("a", 1_500), tool("b", 1_500)] });
    expect(((await refusal(big)) as McpListingRefused).reason).toMatch(/exceed 2000 bytes/);
    expect(((await refusal(big, { ...limits, sharedBytes: true })) as McpListingRefused).reason).toMatch(
      /every server together/,
    );
  });

  it("refuses past the pages and past the deadline", async () => {
    let n = 0;
    const endless = async () => ({ tools: [tool(`e${n++}`)], nextCursor: String(n) });
    expect(((await refusal(endless)) as McpListingRefused).reason).toMatch(/more than 4 pages/);
    const never = (_cursor: string | undefined) =>
      new Promise<ToolPage>((_, reject) => setTimeout(() => reject(new Error("aborted")), 300));
    expect(((await refusal(never, { ...limits, deadlineMs: 100 })) as McpListingRefused).reason).toMatch(
      /did not finish within 100 ms/,
    );
  });

  it("a caller's signal ends it with the page's own error, not a refusal", async () => {
    const controller = new AbortController();
    const listing = listBounded(
      "s",
      (_cursor, signal) =>
        new Promise<ToolPage>((_, reject) =>
          signal.addEventListener("abort", () => reject(new Error("stopped"))),
        ),
      { ...limits, deadlineMs: 60_000 },
      controller.signal,
    );
    controller.abort();
    await expect(listing).rejects.toThrow("stopped");
  });
});
