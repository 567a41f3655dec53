import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionState } from "../../src/engine/state.js";
import type { JournalStore, JournalWriter } from "../../src/journal/store.js";
import { RECENT_RECORDS } from "../../src/journal/window.js";
import type { ModelRequest, Provider } from "../../src/providers/provider.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import { engineFor, Recording, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * A long session's memory is its fold and a bounded window of records, not its journal: the
 * writer holds at most a window of records whatever the length, the fold keeps whole only the
 * results still in front of the model, and what is read back from disk (inspect, resume) is
 * what the session recorded.
 */

const STEPS = 2_000;
/** Ten files of ~2 KB: a few results fill the window, so pruning and compaction happen all along. */
const FILES = Object.fromEntries(
  Array.from({ length: 10 }, (_, i) => [`f${i}.txt`, `${`file ${i} line\n`.repeat(150)}`]),
);
const LIMITS = {
  contextWindowTokens: 8_000,
  replyReserveTokens: 500,
  maxModelRequests: 3 * STEPS,
  maxToolCalls: STEPS + 5,
};

/** Reads a file each step (nothing of what is sent is kept), then answers; compactions get a short summary. */
function reader(steps: number): Provider {
  const scripted = ScriptedProvider.fromFunction(
    (_m, step) =>
      step < steps
        ? { calls: [{ id: `read-${step}`, name: "read_file", arguments: { path: `f${step % 10}.txt` } }] }
        : { text: "done" },
    "flat",
  );
  return {
    identity: scripted.identity,
    stream(request: ModelRequest, signal: AbortSignal) {
      if (request.purpose === "compaction") return summary(request.step);
      return scripted.stream(request, signal);
    },
  };
}

async function* summary(step: number): AsyncIterable<unknown> {
  yield { type: "text_delta", text: `Goal: read the files. Progress: ${step} reads.` };
  yield { type: "end", reason: "stop" };
}

/** The workspace's store, keeping each writer it opens so the test can look at what it holds. */
function watched(store: JournalStore, writers: JournalWriter[]): JournalStore {
  return {
    openWriter: async (id, options) => {
      const writer = await store.openWriter(id, options);
      writers.push(writer);
      return writer;
    },
    read: (id) => store.read(id),
    readReport: (id) => store.readReport(id),
    exists: (id) => store.exists(id),
    list: () => store.list(),
    listChildren: (id) => store.listChildren(id),
  };
}

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace(FILES);
});
afterEach(async () => {
  await ws.cleanup();
});

describe("flat memory over a long session", () => {
  it(`a ${STEPS}-step session: the writer holds a bounded window, the fold only the context's results, and resume reads the rest back`, async () => {
    const writers: JournalWriter[] = [];
    let largestWindow = 0;
    let seen = 0;
    const summaryOf = await engineFor(ws, {
      provider: reader(STEPS),
      limits: LIMITS,
      extra: {
        store: watched(ws.store, writers),
        listener: {
          record() {
            seen += 1;
            largestWindow = Math.max(largestWindow, writers.at(-1)?.recent.length ?? 0);
          },
        },
      },
    }).run();
    expect(summaryOf).toMatchObject({ status: "unverified", tool_calls: STEPS });

    const records = await ws.journal();
    expect(records.length).toBe(seen);
    expect(records.length).toBeGreaterThan(4 * STEPS);
    expect(records.filter((r) => r.type === "context.compacted").length).toBeGreaterThan(10);
    // Whatever the length, the writer kept a window of records, not the journal.
    expect(largestWindow).toBeGreaterThan(0);
    expect(largestWindow).toBeLessThanOrEqual(2 * RECENT_RECORDS);

    // inspect's fold, from the journal on disk: every call and reply counted, and the results
    // kept whole are only those still among the messages (the others are the journal's).
    const state = SessionState.from(records);
    expect(state.toolCalls).toBe(STEPS);
    expect(state.replyCount).toBe(STEPS + 1);
    expect(state.lastReply?.text).toBe("done");
    const inContext = new Set(state.messages.flatMap((m) => (m.role === "tool" ? [m.call_id] : [])));
    const whole = [...state.results.values()].filter((r) => r.content !== "");
    expect(whole.length).toBeGreaterThan(0);
    expect(whole.length).toBeLessThanOrEqual(inContext.size);
    for (const result of whole) expect(inContext.has(result.call_id)).toBe(true);
    // A result compacted away leaves the fold (the journal keeps it), as does a settled call's
    // start: the per-call maps hold the context's calls, not the session's.
    expect(state.results.has("read-0")).toBe(false);
    expect(state.results.size).toBeLessThanOrEqual(inContext.size);
    expect(state.started.size).toBe(0);
    expect(records.some((r) => r.type === "tool.result" && r.data.call_id === "read-0")).toBe(true);

    // Resume: the next turn starts from the fold of the records read back from disk, and its
    // request is the system message, that fold's messages and the new input (no prune or
    // compaction in between).
    const next = new Recording(ScriptedProvider.fromFunction(() => ({ text: "again" }), "flat"));
    const resumed = await engineFor(ws, {
      provider: next,
      limits: LIMITS,
      extra: { input: "one more", store: watched(ws.store, writers) },
    }).run();
    expect(resumed.answer).toBe("again");
    const after = await ws.journal();
    expect(after.slice(0, records.length)).toEqual(records);
    const between = after.slice(records.length);
    if (!between.some((r) => r.type === "context.pruned" || r.type === "context.compacted"))
      expect(next.requests[0]?.messages.slice(1)).toEqual([
        ...state.messages,
        { role: "user", content: "one more" },
      ]);
    expect(next.requests[0]?.messages[0]?.role).toBe("system");
    expect(writers.at(-1)?.length).toBe(after.length);
  }, 300_000);
});
