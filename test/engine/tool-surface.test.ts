import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ToolSurfaceSource } from "../../src/engine/tool-surface.js";
import { ToolRegistry, type ToolSnapshot } from "../../src/runtime/registry.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { type AnyTool, defineTool } from "../../src/tools/tool.js";
import { count, Recording, run, scripted, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * A tool surface that changes mid-session (an MCP server's tool list) is taken up only at a step
 * boundary, journaled whole as `tools.changed`, and is what a resume is compared against.
 */

function echo(name: string, description = "echoes the text it is given"): AnyTool {
  return defineTool({
    name,
    description,
    version: "1",
    input: z.strictObject({ text: z.string() }),
    effect: "read_only",
    idempotency: "idempotent",
    timeoutMs: 1_000,
    resources: () => ({ read: [], write: [] }),
    concurrencySafe: () => true,
    async execute(args) {
      return { summary: `${name}: ${args.text}`, content: `${name} says ${args.text}` };
    },
  });
}

function snapshotOf(tools: AnyTool[]): ToolSnapshot {
  const registry = new ToolRegistry();
  for (const tool of tools) registry.register(tool);
  return registry.snapshot();
}

const FIRST = () => [...createFileTools(), echo("remote_a"), echo("remote_b")];
const SECOND = () => [
  ...createFileTools(),
  echo("remote_a", "echoes the text it is given, louder"),
  echo("remote_c"),
];

/** A source whose list changes once the model has replied `after` times. */
function changingAfter(after: number, next: ToolSnapshot): ToolSurfaceSource & { calls: number[] } {
  const calls: number[] = [];
  let replies = 0;
  return {
    calls,
    async refresh(current) {
      calls.push(replies);
      replies += 1;
      return replies > after ? next : current;
    },
  };
}

const turns = [
  { calls: [{ id: "a1", name: "remote_a", arguments: { text: "one" } }] },
  { calls: [{ id: "c1", name: "remote_c", arguments: { text: "two" } }] },
  { text: "done" },
];

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "hi\n" });
});
afterEach(async () => ws.cleanup());

describe("a changing tool surface", () => {
  it("is taken up between steps, journaled whole, and offered to the model from the next request", async () => {
    const next = snapshotOf(SECOND());
    const source = changingAfter(1, next);
    const model = new Recording(scripted({ turns }));
    const summary = await run(ws, { provider: model, tools: FIRST(), extra: { toolSurface: source } });
    expect(summary.status).toBe("unverified");

    const records = await ws.journal();
    const changed = records.filter((r) => r.type === "tools.changed");
    expect(changed).toHaveLength(1);
    expect(changed[0]!.data).toMatchObject({
      step: 1,
      reason: "refresh",
      added: ["remote_c"],
      removed: ["remote_b"],
      changed: ["remote_a"],
      tools_digest: next.digest,
    });
    // The change was recorded after the first call's result and before the second request.
    const order = records.map((r) => r.type);
    expect(order.indexOf("tools.changed")).toBeGreaterThan(order.indexOf("tool.result"));
    const requested = records.flatMap((r) => (r.type === "model.started" ? [r.data.tools_digest] : []));
    const firstDigest = snapshotOf(FIRST()).digest;
    expect(requested).toEqual([firstDigest, next.digest, next.digest]);
    // What the model was offered: remote_b first, remote_c after the change.
    const names = model.requests.map((r) => r.tools.map((t) => t.name));
    expect(names[0]).toContain("remote_b");
    expect(names[0]).not.toContain("remote_c");
    expect(names[1]).toContain("remote_c");
    expect(names[1]).not.toContain("remote_b");
    // remote_c ran: it was known to the runtime when its call came.
    const results = records.flatMap((r) => (r.type === "tool.result" ? [r.data] : []));
    expect(results.map((r) => [r.call_id, r.status])).toEqual([
      ["a1", "ok"],
      ["c1", "ok"],
    ]);
  });

  it("a resume is compared with the latest recorded surface: the old one is refused unless accepted", async () => {
    const next = snapshotOf(SECOND());
    const first = await run(ws, {
      turns,
      tools: FIRST(),
      limits: { maxModelRequests: 2 },
      extra: { toolSurface: changingAfter(1, next) },
    });
    expect(first.status).toBe("stopped");
    const before = (await ws.journal()).length;

    // The surface the session started with is no longer the one it last offered.
    await expect(run(ws, { turns, tools: FIRST(), mode: "resume" })).rejects.toThrow(
      /different tool set.*--accept-tool-changes/,
    );
    expect((await ws.journal()).length).toBe(before);

    // The latest recorded surface resumes as is: no tools.changed added.
    const same = await run(ws, { turns, tools: SECOND(), mode: "resume" });
    expect(same.status).toBe("unverified");
    expect(count(await ws.journal(), "tools.changed")).toBe(1);
  });

  it("--accept-tool-changes journals the new surface on resume and continues with it", async () => {
    await run(ws, { turns, tools: FIRST(), limits: { maxModelRequests: 1 } });
    const model = new Recording(scripted({ turns }));
    const summary = await run(ws, {
      provider: model,
      tools: SECOND(),
      mode: "resume",
      extra: { acceptToolChanges: true },
    });
    expect(summary.status).toBe("unverified");
    const changed = (await ws.journal()).filter((r) => r.type === "tools.changed");
    expect(changed.map((r) => r.data)).toEqual([
      expect.objectContaining({
        reason: "resume",
        added: ["remote_c"],
        removed: ["remote_b"],
        changed: ["remote_a"],
      }),
    ]);
    expect(model.requests.at(-1)!.tools.map((t) => t.name)).toContain("remote_c");
  });
});
