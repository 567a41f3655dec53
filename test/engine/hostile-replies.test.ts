import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JournalError, type JournalStore, type JournalWriter } from "../../src/journal/store.js";
import type { AnyNewEvent } from "../../src/journal/vocabulary.js";
import { count, Recording, run, scripted, tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "helo, harness\n" });
});
afterEach(async () => ws.cleanup());

/**
 * A journal that refuses to encode model replies, as the real one does for a value with no
 * canonical form: the engine's last line of defence if the decoder ever lets one through.
 */
function refusingReplies(inner: JournalStore): JournalStore {
  return {
    read: (id) => inner.read(id),
    readReport: (id) => inner.readReport(id),
    exists: (id) => inner.exists(id),
    list: () => inner.list(),
    listChildren: (id) => inner.listChildren(id),
    async openWriter(id, options) {
      const writer = await inner.openWriter(id, options);
      const wrapped: JournalWriter = {
        sessionId: writer.sessionId,
        keyId: writer.keyId,
        recoveredLock: writer.recoveredLock,
        get length() {
          return writer.length;
        },
        get last() {
          return writer.last;
        },
        get recent() {
          return writer.recent;
        },
        readAll: () => writer.readAll(),
        append(events: readonly AnyNewEvent[]) {
          if (events.some((e) => e.type === "model.reply")) {
            return Promise.reject(
              new JournalError(
                "INVALID_EVENT",
                "cannot journal model.reply event: Lone surrogate is not allowed",
              ),
            );
          }
          return writer.append(events);
        },
        close: () => writer.close(),
      };
      return wrapped;
    },
  };
}

describe("a reply the journal refuses", () => {
  it("is recorded as a protocol error and stops the run; a resume makes one new request, not a loop", async () => {
    const backend = refusingReplies(ws.store);
    const provider = new Recording(scripted({ script: () => ({ text: "anything" }) }));
    const first = await run(ws, { provider, extra: { store: backend } });
    expect(first).toMatchObject({ status: "stopped", reason: "protocol_error" });
    expect(first.message).toContain("could not be recorded");

    const second = await run(ws, { provider, extra: { store: backend } });
    expect(second).toMatchObject({ status: "stopped", reason: "protocol_error" });
    expect(provider.requests).toHaveLength(2);

    const records = await ws.journal();
    expect(count(records, "model.reply")).toBe(0);
    expect(count(records, "model.protocol_error")).toBe(2);
    expect(count(records, "model.started")).toBe(2);
    const [error] = records.filter((r) => r.type === "model.protocol_error");
    expect(error?.data).toMatchObject({ evidence: { text: "anything", calls: [], events: 0 } });
  });
});

describe("refused calls never run", () => {
  it("a refused call is answered INVALID_ARGUMENTS, with no tool.started, while its sibling runs", async () => {
    const deep = `{"path":"hello.txt","content":${"[".repeat(1000)}${"]".repeat(1000)}}`;
    const provider = scripted({
      turns: [
        {
          stream: [
            { type: "tool_call_delta", call_id: "bad", name: "write_file", arguments: deep },
            {
              type: "tool_call_delta",
              call_id: "good",
              name: "read_file",
              arguments: '{"path":"hello.txt"}',
            },
            { type: "end", reason: "tool_calls" },
          ],
        },
        { text: "done" },
      ],
    });
    const summary = await run(ws, { provider });
    expect(summary).toMatchObject({ status: "unverified", tool_calls: 1 });
    const results = (await ws.events("tool.result")).map((r) => r.data as Record<string, unknown>);
    expect(results.map((r) => [r.call_id, r.status, r.error_type ?? null])).toEqual([
      ["bad", "invalid", "INVALID_ARGUMENTS"],
      ["good", "ok", null],
    ]);
    const started = (await ws.events("tool.started")).map((r) => (r.data as Record<string, unknown>).call_id);
    expect(started).toEqual(["good"]);
    expect(await ws.file("hello.txt")).toBe("helo, harness\n");
  });
});
