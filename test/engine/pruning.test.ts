import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileArtifactStore } from "../../src/artifacts/file-store.js";
import { FileEqualsCheck } from "../../src/engine/acceptance.js";
import { KEEP_RECENT_RESULTS, prunedPlaceholder } from "../../src/engine/pruning.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import type { ModelRequest, Provider } from "../../src/providers/provider.js";
import { Recording, run, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * Pruning: over 80% of (window - reserve) the oldest tool results are replaced by placeholders
 * naming the artifact that holds them; what is sent stays a function of the journal, so a crash
 * after any record and a resume send the same next request as an uninterrupted run.
 */

/** Each read returns a different file, so every result is distinguishable in what was sent. */
const FILES = Object.fromEntries(
  Array.from({ length: 20 }, (_, i) => [`f${i}.txt`, `${`file ${i}: `.repeat(240)}\n`]),
);
const WINDOW = 10_000;
const RESERVE = 1_000;
const LIMITS = { contextWindowTokens: WINDOW, replyReserveTokens: RESERVE };

function reader(reads: number): Provider {
  return {
    identity: { kind: "test", model: "reader" },
    async *stream(request: ModelRequest) {
      if (request.step < reads) {
        yield {
          type: "tool_call_delta",
          call_id: `read-${request.step}`,
          name: "read_file",
          arguments: JSON.stringify({ path: `f${request.step}.txt` }),
        };
      } else {
        yield { type: "text_delta", text: "done" };
      }
      yield { type: "end", reason: request.step < reads ? "tool_calls" : "stop" };
    },
  };
}

function toolMessages(request: ModelRequest) {
  return request.messages.flatMap((m) => (m.role === "tool" ? [m] : []));
}

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace(FILES);
});
afterEach(async () => {
  await ws.cleanup();
});

describe("pruning old tool results", () => {
  it("keeps a long session within the window by replacing the oldest results with artifact placeholders", async () => {
    const model = new Recording(reader(20));
    const summary = await run(ws, {
      provider: model,
      limits: LIMITS,
      acceptance: [new FileEqualsCheck(ws.fs, "f0.txt", FILES["f0.txt"]!)],
    });
    expect(summary).toMatchObject({ status: "verified" });
    expect(model.requests).toHaveLength(21);
    const records = await ws.journal();
    const pruned = records.flatMap((r) => (r.type === "context.pruned" ? [r.data] : []));
    expect(pruned.length).toBeGreaterThan(0);
    for (const event of pruned) expect(event.tokens_after).toBeLessThan(event.tokens_before);

    // Every request was estimated within the window minus the reserve.
    for (const r of records) {
      if (r.type === "model.started")
        expect(r.data.estimated_input_tokens!).toBeLessThanOrEqual(WINDOW - RESERVE);
    }
    const artifacts = new FileArtifactStore(join(ws.root, ".harness", "sessions", "s", "artifacts"));
    const last = model.requests.at(-1)!;
    const results = toolMessages(last);
    expect(results).toHaveLength(20);
    // The most recent results went whole; the oldest were replaced by a placeholder whose
    // artifact holds exactly what the model was first sent.
    for (const message of results.slice(-KEEP_RECENT_RESULTS)) expect(message.content).toContain("file ");
    const first = results[0]!;
    const artifact = pruned[0]!.results.find((r) => r.call_id === "read-0")!.artifact;
    expect(first.content).toBe(prunedPlaceholder("read_file", artifact));
    const firstSent = toolMessages(model.requests[1]!)[0]!.content;
    expect(new TextDecoder().decode(await artifacts.read(artifact.id))).toBe(firstSent);
    expect(firstSent).toContain("file 0: ");
    // Pruned once, a result stays pruned in every later request (each request extends how the last began).
    const prunedIds = new Set(pruned.flatMap((e) => e.results.map((r) => r.call_id)));
    expect(prunedIds.size).toBe(pruned.reduce((n, e) => n + e.results.length, 0));
  });

  it("a session that fits never prunes: old journals and small sessions send what they always did", async () => {
    const model = new Recording(reader(3));
    await run(ws, { provider: model, limits: { contextWindowTokens: 100_000 } });
    expect(await ws.events("context.pruned")).toHaveLength(0);
    const sent = toolMessages(model.requests.at(-1)!);
    expect(sent).toHaveLength(3);
    sent.forEach((message, i) => {
      expect(message.content).toContain(`file ${i}: file ${i}: `);
    });
  });

  it("a crash after any record, then a resume, sends the same next request as the uninterrupted run", async () => {
    const reference = new Recording(reader(8));
    await run(ws, { provider: reference, session: "ref", limits: LIMITS });
    const records = await ws.journal("ref");
    expect(records.some((r) => r.type === "context.pruned")).toBe(true);
    // Records appended together are one durable write, so several k end in the same state.
    const compared = new Set<number>();
    for (let k = 1; k < records.length; k += 1) {
      const session = `crash-${k}`;
      let seen = 0;
      await expect(
        run(ws, {
          provider: reader(8),
          session,
          limits: LIMITS,
          extra: {
            listener: {
              record: () => {
                if (++seen === k) throw new Error("simulated crash");
              },
            },
          },
        }),
      ).rejects.toThrow("simulated crash");
      // Events appended together are one write: the crash comes after the whole batch.
      const kept: AnyRecord[] = await ws.journal(session);
      expect(kept.length).toBeGreaterThanOrEqual(k);
      const model = new Recording(reader(8));
      await run(ws, { provider: model, session, mode: "resume", limits: LIMITS });
      const index = kept.filter((r) => r.type === "model.reply").length;
      // A call started without a result is recovery's business (its outcome is unknown): no request.
      if (kept.at(-1)!.type === "tool.started") {
        expect(model.requests).toHaveLength(0);
        continue;
      }
      const expected = reference.requests[index];
      if (expected === undefined) {
        // Past the last request: the resumed run finishes without asking the model again.
        expect(model.requests).toHaveLength(0);
        continue;
      }
      compared.add(index);
      expect({ k, messages: model.requests[0]!.messages }).toEqual({ k, messages: expected.messages });
    }
    // Every request was sent again by some resume and compared.
    expect([...compared].sort((a, b) => a - b)).toEqual(reference.requests.map((_, i) => i));
  }, 120_000);
});
