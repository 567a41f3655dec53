import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, removeTempDirs, sessionIds, workspaceWith } from "./helpers.js";
import { connectServe, factsOf, textOf } from "./mcp-serve-client.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const uri = (id: string) => `harness://sessions/${id}/events.jsonl`;

describe("harness mcp serve: resources never give what the policy refuses through tools", () => {
  it("an earlier session's journal holding a file now denied to read_file is neither listed nor readable", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n", "secret.txt": "TOPSECRET\n" });
    const earlier = await connectServe(["--workspace", workspace]);
    let earlierSession: string;
    try {
      const read = await earlier.client.callTool({ name: "read_file", arguments: { path: "secret.txt" } });
      expect(textOf(read)).toContain("TOPSECRET");
      earlierSession = factsOf(read).session;
    } finally {
      await earlier.close();
    }

    const served = await connectServe(["--workspace", workspace, "--deny", "read_file(secret.txt)"]);
    try {
      const denied = await served.client.callTool({ name: "read_file", arguments: { path: "secret.txt" } });
      expect(denied.isError).toBe(true);
      expect(textOf(denied)).not.toContain("TOPSECRET");
      const own = factsOf(
        await served.client.callTool({ name: "read_file", arguments: { path: "a.txt" } }),
      ).session;
      expect(sessionIds(workspace)).toEqual(expect.arrayContaining([earlierSession, own]));

      const { resources } = await served.client.listResources();
      expect(resources.map((resource) => resource.uri)).toEqual([uri(own)]);
      await expect(served.client.readResource({ uri: uri(earlierSession) })).rejects.toThrow(/no session/);
      const mine = await served.client.readResource({ uri: uri(own) });
      const text = (mine.contents[0] as { text: string }).text;
      expect(text).toContain('"name":"read_file"');
      expect(text).not.toContain("TOPSECRET");
    } finally {
      await served.close();
    }
  });
});
