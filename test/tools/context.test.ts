// The one ToolContext factory: what a context holds when only the required parts are given.
import { describe, expect, it } from "vitest";
import { MemoryArtifactStore } from "../../src/artifacts/memory-store.js";
import { createToolContext } from "../../src/tools/context.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";

describe("createToolContext", () => {
  const parts = { callId: "c1", fs: new MemoryWorkspaceFs(), artifacts: new MemoryArtifactStore() };

  it("defaults to a signal that never fires, nothing observed, and no policy ports", () => {
    const context = createToolContext(parts);
    expect(context.callId).toBe("c1");
    expect(context.signal.aborted).toBe(false);
    expect(context.observedVersion("a.txt")).toBeUndefined();
    expect("hostRoot" in context).toBe(false);
    expect(context.readAccess).toBeUndefined();
    expect(context.artifactSources).toBeUndefined();
  });

  it("keeps what it is given", async () => {
    const controller = new AbortController();
    const context = createToolContext({
      ...parts,
      signal: controller.signal,
      observedVersion: (path) => (path === "a.txt" ? "v1" : undefined),
      hostRoot: "/ws",
      readAccess: async () => "denied",
      artifactSources: () => ["a.txt"],
    });
    controller.abort();
    expect(context.signal.aborted).toBe(true);
    expect(context.observedVersion("a.txt")).toBe("v1");
    expect(context.hostRoot).toBe("/ws");
    expect(await context.readAccess?.("a.txt")).toBe("denied");
    expect(context.artifactSources?.("x")).toEqual(["a.txt"]);
  });
});
