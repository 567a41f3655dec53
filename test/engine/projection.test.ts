import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionState } from "../../src/engine/state.js";
import { SYSTEM_PROMPT } from "../../src/engine/system-prompt.js";
import {
  count,
  lastVersion,
  Recording,
  run,
  scripted,
  tempWorkspace,
  type Workspace,
} from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "a.txt": "alpha\n", "b.txt": "beta\n" });
});
afterEach(async () => ws.cleanup());

describe("the model request is the journal's projection", () => {
  it("every request equals the projection of the journal recorded before it, and every call is paired", async () => {
    const provider = new Recording(
      scripted({
        script: (messages, step) => {
          if (step === 0) {
            return {
              text: "Looking around.",
              calls: [
                { id: "r1", name: "read_file", arguments: { path: "a.txt" } },
                { id: "bad", name: "read_directory_recursive", arguments: {} },
                { id: "r2", name: "read_file", arguments: { path: "missing.txt" } },
                { id: "w1", name: "write_file", arguments: { path: "c.txt", content: "gamma\n" } },
              ],
            };
          }
          if (step === 1) {
            return {
              calls: [
                {
                  id: "e1",
                  name: "edit_file",
                  arguments: {
                    path: "a.txt",
                    old_text: "alpha",
                    new_text: "ALPHA",
                    expected_version: lastVersion(
                      messages.filter((m) => m.role === "tool" && m.call_id === "r1"),
                    ),
                  },
                },
              ],
            };
          }
          return { text: "done" };
        },
      }),
    );
    await run(ws, { provider });
    const records = await ws.journal();
    const starts = records.filter((r) => r.type === "model.started");
    expect(provider.requests).toHaveLength(starts.length);
    for (const [i, start] of starts.entries()) {
      const before = SessionState.from(records.slice(0, start.seq));
      const request = provider.requests[i]!;
      expect(request.messages).toEqual([{ role: "system", content: SYSTEM_PROMPT }, ...before.messages]);
      // Pairing: after each assistant message, exactly one tool message per call, in call order.
      const messages = request.messages;
      for (const [at, message] of messages.entries()) {
        if (message.role !== "assistant") continue;
        const following = messages.slice(at + 1, at + 1 + message.calls.length);
        expect(following.map((m) => (m.role === "tool" ? m.call_id : m.role))).toEqual(
          message.calls.map((c) => c.id),
        );
      }
    }
    const statuses = (await ws.events("tool.result")).map((r) => [
      (r.data as { call_id: string }).call_id,
      (r.data as { status: string }).status,
    ]);
    expect(statuses).toEqual([
      ["r1", "ok"],
      ["bad", "invalid"],
      ["r2", "error"],
      ["w1", "ok"],
      ["e1", "ok"],
    ]);
    expect(await ws.file("a.txt")).toBe("ALPHA\n");
    expect(await ws.file("c.txt")).toBe("gamma\n");
  });

  it("the unknown-tool observation names the available tools and the closest one", async () => {
    const provider = new Recording(
      scripted({
        turns: [{ calls: [{ id: "x", name: "readfile", arguments: { path: "a.txt" } }] }, { text: "ok" }],
      }),
    );
    await run(ws, { provider });
    const observation = provider.requests[1]?.messages.at(-1);
    expect(observation).toMatchObject({ role: "tool", call_id: "x", status: "invalid" });
    expect(observation?.role === "tool" && observation.content).toContain('Did you mean "read_file"');
    expect(observation?.role === "tool" && observation.content).toContain("glob, grep");
    expect(count(await ws.journal(), "tool.started")).toBe(0);
  });

  it("schema errors name each field with what was expected and received", async () => {
    const provider = new Recording(
      scripted({
        turns: [
          {
            calls: [
              {
                id: "x",
                name: "read_file",
                arguments: { path: "a.txt", limit: "2", offset: 1.5, mode: "fast" },
              },
            ],
          },
          { text: "ok" },
        ],
      }),
    );
    await run(ws, { provider });
    const [result] = await ws.events("tool.result");
    const data = result?.data as { data?: { fields?: { field: string }[] } } | undefined;
    const fields = (data?.data?.fields ?? []).map((f) => f.field);
    expect(fields).toEqual(expect.arrayContaining(["limit", "offset", "(arguments)"]));
  });
});
