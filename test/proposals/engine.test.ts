import { afterEach, describe, expect, it } from "vitest";
import { ProposalOverlay } from "../../src/proposals/overlay.js";
import type { ModelMessage } from "../../src/protocol/types.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { lastVersion, run, tempWorkspace, type Workspace } from "../support/session.js";

const ORIGINAL = "export const sum = (a: number, b: number) => a - b;\n";
const FIXED = "export const sum = (a: number, b: number) => a + b;\n";
const REFINED = "export const sum = (a: number, b: number): number => a + b;\n";

let ws: Workspace | undefined;
afterEach(async () => ws?.cleanup());

function lastToolText(messages: readonly ModelMessage[]): string {
  const tool = [...messages].reverse().find((m) => m.role === "tool");
  return tool?.role === "tool" ? tool.content : "";
}

describe("propose mode on the real runtime", () => {
  it("reads see the preview, and a change based on it supersedes the first proposal", async () => {
    ws = await tempWorkspace({ "src/sum.ts": ORIGINAL });
    const seen: string[] = [];
    const summary = await run(ws, {
      write: "propose",
      extra: { proposals: (existing) => new ProposalOverlay(ws!.fs, existing) },
      script: (messages, step) => {
        const edit = (id: string, from: string, to: string) => ({
          calls: [
            {
              id,
              name: "edit_file",
              arguments: {
                path: "src/sum.ts",
                old_text: from,
                new_text: to,
                expected_version: lastVersion(messages),
              },
            },
          ],
        });
        const read = (id: string) => ({
          calls: [{ id, name: "read_file", arguments: { path: "src/sum.ts" } }],
        });
        switch (step) {
          case 0:
            return read("read-1");
          case 1:
            return edit("edit-1", "a - b", "a + b");
          case 2:
            return read("read-2");
          case 3:
            seen.push(lastToolText(messages));
            return edit("edit-2", "b: number) =>", "b: number): number =>");
          default:
            return { text: "done" };
        }
      },
    });
    expect(summary.status).toBe("needs_review");
    // The second read showed the first proposal, not the file on disk.
    expect(seen[0]).toContain("a + b");
    expect(seen[0]).toContain(`version: ${sha256Hex(FIXED)}`);
    const recorded = (await ws.events("proposal.recorded")).map((r) => r.data as Record<string, unknown>);
    expect(recorded.map((p) => [p.call_id, p.base_version, p.content])).toEqual([
      ["edit-1", sha256Hex(ORIGINAL), FIXED],
      ["edit-2", sha256Hex(ORIGINAL), REFINED],
    ]);
    expect(await ws.file("src/sum.ts")).toBe(ORIGINAL);
  });
});
