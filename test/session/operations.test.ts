import { describe, expect, it } from "vitest";
import { SessionState } from "../../src/engine/state.js";
import { JournalKey } from "../../src/journal/key.js";
import { MemoryJournalStore } from "../../src/journal/memory-store.js";
import type { JournalStore } from "../../src/journal/store.js";
import type { AnyNewEvent } from "../../src/journal/vocabulary.js";
import { adoptSession, reviewAdoption } from "../../src/session/operations/adopt.js";
import { SessionOperationError } from "../../src/session/operations/error.js";
import { resolveReview } from "../../src/session/operations/review.js";
import { stopForLostWorkspace } from "../../src/session/operations/stop-lost-workspace.js";
import { UsageError } from "../../src/session/usage-error.js";

const unknownResult = (callId: string): AnyNewEvent => ({
  type: "tool.result",
  data: {
    call_id: callId,
    name: "write_file",
    status: "unknown",
    summary: "outcome unknown",
    content: "the call started; its outcome was not recorded",
    duration_ms: 0,
  },
});

const resolved = (callId: string, resolution: "applied" | "not_applied" | "undetermined", by: string) =>
  ({
    type: "review.resolved",
    data: { call_id: callId, resolution, evidence: "looked", by },
  }) as const;

async function appendAs(backend: JournalStore, sessionId: string, events: AnyNewEvent[], create = false) {
  const writer = await backend.openWriter(sessionId, { create });
  try {
    await writer.append(events);
  } finally {
    await writer.close();
  }
}

/**
 * The backend as an operation sees it when another writer gets in first: `before` runs (and
 * appends, holding and releasing the lock) after anything the operation read without the lock
 * and just before its own writer is opened.
 */
function racing(backend: JournalStore, before: () => Promise<void>): JournalStore {
  let raced = false;
  return {
    openWriter: async (sessionId, options) => {
      if (!raced) {
        raced = true;
        await before();
      }
      return backend.openWriter(sessionId, options);
    },
    read: (sessionId) => backend.read(sessionId),
    readReport: (sessionId) => backend.readReport(sessionId),
    exists: (sessionId) => backend.exists(sessionId),
    list: () => backend.list(),
    listChildren: (sessionId) => backend.listChildren(sessionId),
  };
}

const typesOf = async (backend: JournalStore, sessionId: string) =>
  (await backend.read(sessionId)).map((r) => r.type);

describe("resolveReview", () => {
  it("refuses a call another review settled just before the lock, and appends nothing", async () => {
    const backend = new MemoryJournalStore();
    await appendAs(backend, "s", [unknownResult("w")], true);
    const other = racing(backend, () => appendAs(backend, "s", [resolved("w", "applied", "first")]));
    const review = resolveReview(other, "s", {
      callId: "w",
      resolution: "not_applied",
      evidence: "checked",
      by: "second",
    });
    await expect(review).rejects.toThrow(UsageError);
    await expect(review).rejects.toThrow(/already resolved as applied by first/);
    const state = SessionState.from(await backend.read("s"));
    expect(state.resolutions.get("w")).toMatchObject({ resolution: "applied", by: "first" });
    expect(await typesOf(backend, "s")).toEqual(["tool.result", "review.resolved"]);
  });

  it("counts what is left after the resolution, another writer's resolution included", async () => {
    const backend = new MemoryJournalStore();
    await appendAs(backend, "s", [unknownResult("a"), unknownResult("b")], true);
    const other = racing(backend, () => appendAs(backend, "s", [resolved("b", "not_applied", "first")]));
    const report = await resolveReview(other, "s", {
      callId: "a",
      resolution: "applied",
      evidence: "checked",
      by: "second",
    });
    expect(report.left).toBe(0);
  });

  it("re-resolves an undetermined outcome, and refuses a call whose outcome is not unknown", async () => {
    const backend = new MemoryJournalStore();
    await appendAs(backend, "s", [unknownResult("w"), resolved("w", "undetermined", "first")], true);
    const request = { callId: "w", resolution: "applied", evidence: " checked ", by: "second" } as const;
    expect((await resolveReview(backend, "s", request)).left).toBe(0);
    expect(SessionState.from(await backend.read("s")).resolutions.get("w")).toEqual({
      call_id: "w",
      resolution: "applied",
      evidence: "checked",
      by: "second",
    });
    await expect(resolveReview(backend, "s", { ...request, callId: "x" })).rejects.toThrow(
      /has no unknown outcome to resolve/,
    );
    await expect(resolveReview(backend, "s", { ...request, evidence: " " })).rejects.toThrow(/--evidence/);
  });
});

describe("adoptSession", () => {
  /** A journal recorded under someone else's key: untrusted here. */
  async function foreignJournal() {
    const mine = new MemoryJournalStore();
    const theirs = mine.withKey(JournalKey.ephemeral());
    await appendAs(theirs, "s", [unknownResult("w")], true);
    return { mine, theirs };
  }

  it("adopts the head the person reviewed", async () => {
    const { mine } = await foreignJournal();
    const reviewed = await reviewAdoption(mine, "s");
    expect(reviewed.trust.trusted).toBe(false);
    const report = await adoptSession(mine, "s", reviewed, "me");
    expect(report).toEqual({ headHash: reviewed.head?.hash, records: 1 });
    expect(await typesOf(mine, "s")).toEqual(["tool.result", "journal.adopted"]);
  });

  it("refuses with JOURNAL_CHANGED when the journal gained a record after the review", async () => {
    const { mine, theirs } = await foreignJournal();
    const reviewed = await reviewAdoption(mine, "s");
    const changed = racing(mine, () => appendAs(theirs, "s", [resolved("w", "applied", "them")]));
    const adoption = adoptSession(changed, "s", reviewed, "me");
    await expect(adoption).rejects.toThrow(SessionOperationError);
    await expect(adoption).rejects.toMatchObject({ code: "JOURNAL_CHANGED" });
    const { records, trust } = await mine.readReport("s");
    expect(trust.trusted).toBe(false);
    expect(records.map((r) => r.type)).toEqual(["tool.result", "review.resolved"]);
  });
});

describe("stopForLostWorkspace", () => {
  it("stops the session for review once, even when asked again", async () => {
    const backend = new MemoryJournalStore();
    await appendAs(backend, "s", [unknownResult("w")], true);
    expect(await stopForLostWorkspace(backend, "s", "host-a:/work")).toEqual({ appended: true });
    expect(await stopForLostWorkspace(backend, "s", "host-a:/work")).toEqual({ appended: false });
    const stops = (await backend.read("s")).filter((r) => r.type === "run.stopped");
    expect(stops.map((r) => r.data)).toEqual([
      expect.objectContaining({ status: "review_required", reason: "workspace_lost" }),
    ]);
    expect(stops[0]?.data).toMatchObject({ message: expect.stringContaining("host-a:/work") });
  });
});
