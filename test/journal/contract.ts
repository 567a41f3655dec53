import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type JournalBackend, JournalError, type JournalWriter } from "../../src/journal/store.js";
import { type AnyNewEvent, type AnyRecord, event, GENESIS_HASH } from "../../src/journal/vocabulary.js";
import { digestOf } from "../../src/shared/hash.js";

export interface BackendUnderTest {
  backend: JournalBackend;
  /** Another handle on the same storage, as a second process would have. */
  reopen(): JournalBackend;
  cleanup(): Promise<void>;
}

/** Builds a fresh, empty backend whose records take their time from `now`. */
export type BackendFactory = (now: () => Date) => Promise<BackendUnderTest>;

export interface TestClock {
  (): Date;
  /** ISO strings of every time handed out so far. */
  readonly given: string[];
}

/** A clock that advances one second per call, starting 2025-03-01T12:00:00Z. */
export function fixedClock(start = Date.parse("2025-03-01T12:00:00.000Z")): TestClock {
  const given: string[] = [];
  return Object.assign(
    () => {
      const now = new Date(start + 1000 * given.length);
      given.push(now.toISOString());
      return now;
    },
    { given },
  );
}

export function input(text: string): AnyNewEvent {
  return event("user.input", { text });
}

export async function rejection(promise: Promise<unknown>): Promise<JournalError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(JournalError);
    return error as JournalError;
  }
  throw new Error("expected the promise to reject");
}

function withoutHash(record: AnyRecord): Omit<AnyRecord, "hash"> {
  const { hash: _hash, ...rest } = record;
  return rest;
}

/** Check the chain invariants directly from the definition (not through the codec). */
export function expectValidChain(records: readonly AnyRecord[]): void {
  let prev = GENESIS_HASH;
  records.forEach((record, index) => {
    expect(record.seq).toBe(index);
    expect(record.prev).toBe(prev);
    expect(record.hash).toBe(digestOf(withoutHash(record)));
    expect(Object.keys(record).sort()).toEqual(["data", "hash", "prev", "seq", "time", "type"]);
    prev = record.hash;
  });
}

/** The behaviour every JournalBackend must show. */
export function journalContract(name: string, factory: BackendFactory): void {
  describe(`${name}: journal contract`, () => {
    let subject: BackendUnderTest;
    let clock: TestClock;
    const open: JournalWriter[] = [];

    beforeEach(async () => {
      clock = fixedClock();
      subject = await factory(clock);
    });
    afterEach(async () => {
      for (const writer of open.splice(0)) await writer.close();
      await subject.cleanup();
    });

    async function writer(sessionId: string, create = true): Promise<JournalWriter> {
      const opened = await subject.backend.openWriter(sessionId, { create });
      open.push(opened);
      return opened;
    }

    it("round-trips appended events through a load, with times from the injected clock", async () => {
      const w = await writer("s1");
      const appended = await w.append([input("hello")]);
      await w.append([event("run.finished", { status: "verified", answer: "done" })]);
      const loaded = await subject.backend.read("s1");
      expect(loaded).toEqual([...appended, w.records[1]]);
      expect(loaded.map((r) => [r.type, r.data])).toEqual([
        ["user.input", { text: "hello" }],
        ["run.finished", { status: "verified", answer: "done" }],
      ]);
      const [first, second] = loaded.map((r) => r.time);
      expect(clock.given).toContain(first);
      expect(clock.given).toContain(second);
      expect(second! > first!).toBe(true);
      expectValidChain(loaded);
    });

    it("numbers records contiguously from 0 and chains each to the one before", async () => {
      const w = await writer("s1");
      for (let i = 0; i < 5; i++) await w.append([input(`message ${i}`)]);
      const loaded = await subject.backend.read("s1");
      expect(loaded.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4]);
      expect(loaded[0]?.prev).toBe(GENESIS_HASH);
      expectValidChain(loaded);
    });

    it("appends a batch as consecutive records sharing one time", async () => {
      const w = await writer("s1");
      await w.append([input("first")]);
      const batch = await w.append([input("a"), input("b"), input("c")]);
      expect(batch.map((r) => r.seq)).toEqual([1, 2, 3]);
      expect(new Set(batch.map((r) => r.time)).size).toBe(1);
      expect(w.records).toHaveLength(4);
      expect(await w.append([])).toEqual([]);
      expectValidChain(await subject.backend.read("s1"));
    });

    it("continues the chain after close and reopen, in another handle on the same storage", async () => {
      const first = await writer("s1");
      await first.append([input("one"), input("two")]);
      await first.close();
      const second = await subject.reopen().openWriter("s1", { create: false });
      open.push(second);
      expect(second.records.map((r) => r.data)).toEqual([{ text: "one" }, { text: "two" }]);
      const [third] = await second.append([input("three")]);
      expect(third?.seq).toBe(2);
      expect(third?.prev).toBe(second.records[1]?.hash);
      const loaded = await subject.backend.read("s1");
      expect(loaded.map((r) => r.data)).toEqual([{ text: "one" }, { text: "two" }, { text: "three" }]);
      expectValidChain(loaded);
    });

    it("refuses a second writer with LOCKED naming the owner, and admits one after close", async () => {
      const first = await writer("s1");
      await first.append([input("one")]);
      const refused = await rejection(subject.backend.openWriter("s1", { create: false }));
      expect(refused.code).toBe("LOCKED");
      expect(refused.message).toContain(`pid ${process.pid}`);
      expect(refused.message).toContain("started 2025-03-01T12:00:00.000Z");
      await first.close();
      const second = await writer("s1", false);
      expect(second.records).toHaveLength(1);
    });

    it("reads without the lock while a writer holds the session", async () => {
      const w = await writer("s1");
      await w.append([input("one")]);
      expect((await subject.backend.read("s1")).map((r) => r.data)).toEqual([{ text: "one" }]);
      await w.append([input("two")]);
      expect(await subject.backend.read("s1")).toEqual(w.records);
    });

    it("rejects an invalid event before writing anything, even within a batch", async () => {
      const w = await writer("s1");
      await w.append([input("kept")]);
      const bad = { type: "user.input", data: { text: 42 } } as unknown as AnyNewEvent;
      const unknownType = { type: "made.up", data: {} } as unknown as AnyNewEvent;
      const loneSurrogate = input("\ud800");
      for (const invalid of [bad, unknownType, loneSurrogate]) {
        const error = await rejection(w.append([input("would be fine"), invalid]));
        expect(error.code).toBe("INVALID_EVENT");
      }
      expect(w.records).toHaveLength(1);
      expect((await subject.backend.read("s1")).map((r) => r.data)).toEqual([{ text: "kept" }]);
      const [next] = await w.append([input("after")]);
      expect(next?.seq).toBe(1);
    });

    it("refuses appends after close", async () => {
      const w = await writer("s1");
      await w.close();
      expect((await rejection(w.append([input("late")]))).code).toBe("LOCKED");
      expect(await subject.backend.read("s1")).toEqual([]);
    });

    it("reports unknown sessions and refuses to open them without create", async () => {
      expect(await subject.backend.exists("nope")).toBe(false);
      expect((await rejection(subject.backend.read("nope"))).code).toBe("SESSION_NOT_FOUND");
      expect((await rejection(subject.backend.openWriter("nope", { create: false }))).code).toBe(
        "SESSION_NOT_FOUND",
      );
      expect(await subject.backend.exists("nope")).toBe(false);
    });

    it("lists sessions sorted by id", async () => {
      for (const id of ["b-2", "a_1", "B.3", "a"]) await (await writer(id)).append([input(id)]);
      expect(await subject.backend.list()).toEqual(["B.3", "a", "a_1", "b-2"]);
      expect(await subject.backend.exists("a_1")).toBe(true);
    });

    it("rejects session ids that are not plain names", async () => {
      for (const id of ["", "../x", ".hidden", "a/b", "a b", "x".repeat(65), "-lead"]) {
        expect((await rejection(subject.backend.openWriter(id, { create: true }))).code).toBe(
          "INVALID_SESSION_ID",
        );
        expect((await rejection(subject.backend.read(id))).code).toBe("INVALID_SESSION_ID");
      }
      expect(await subject.backend.list()).toEqual([]);
    });
  });
}
