import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JournalKey } from "../../src/journal/key.js";
import { MAX_AGENT_DEPTH } from "../../src/journal/session-path.js";
import { JournalError, type JournalStore, type JournalWriter } from "../../src/journal/store.js";
import { type AnyNewEvent, type AnyRecord, event, GENESIS_HASH } from "../../src/journal/vocabulary.js";
import { RECENT_RECORDS } from "../../src/journal/window.js";
import { canonicalJson, digestOf } from "../../src/shared/hash.js";

export interface BackendUnderTest {
  store: JournalStore;
  /** Durable writes (file fsyncs) made so far, where the backend counts them. */
  syncs?: () => number;
  /** Another handle on the same storage, as a second process would have. */
  reopen(): JournalStore;
  /** The key `backend` authenticates records with. */
  key: JournalKey;
  /** A handle on the same storage that authenticates with another key (another user or machine). */
  withKey(key: JournalKey): JournalStore;
  /** The stored lines of a session, and a way to replace them: what a forger with access to storage does. */
  lines(sessionId: string): Promise<string[]>;
  replaceLines(sessionId: string, lines: readonly string[]): Promise<void>;
  /** Take a session's writer lock away behind its writer's back (as `harness unlock --force` does): its next durable write fails. */
  dropWriterLock(sessionId: string): Promise<void>;
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

function sessionStarted(keyId: string) {
  const digest = "a".repeat(64);
  return {
    format_version: 1,
    session_id: "s1",
    harness_version: "test",
    workspace: { name: "w", fingerprint: digest },
    goal: "goal",
    policy: {},
    policy_digest: digest,
    provider: { kind: "scripted" },
    system_prompt_digest: digest,
    tools: [],
    tools_digest: digest,
    key_id: keyId,
  };
}

function adoption(headHash: string, records: number, keyId: string): AnyNewEvent {
  return event("journal.adopted", {
    head_hash: headHash,
    records,
    key_id: keyId,
    previous_key_id: null,
    reason: "FOREIGN_KEY",
    by: "tester",
  });
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

function withoutHashAndMac(record: AnyRecord): Omit<AnyRecord, "hash" | "mac"> {
  const { hash: _hash, mac: _mac, ...rest } = record;
  return rest;
}

/**
 * Check the chain invariants directly from the definition (not through the codec), and, given
 * the key, that every record's mac is the HMAC-SHA256 of its hash under it.
 */
export function expectValidChain(records: readonly AnyRecord[], key?: JournalKey): void {
  let prev = GENESIS_HASH;
  records.forEach((record, index) => {
    expect(record.seq).toBe(index);
    expect(record.prev).toBe(prev);
    expect(record.hash).toBe(digestOf(withoutHashAndMac(record)));
    expect(Object.keys(record).sort()).toEqual(["data", "hash", "mac", "prev", "seq", "time", "type"]);
    if (key) expect(key.verifies(record.hash, record.mac)).toBe(true);
    prev = record.hash;
  });
}

/**
 * What a forger who knows the chain algorithm but not the key does: parse the lines, let `edit`
 * change records, and hash the whole chain again. `mac` decides each record's tag (kept as it
 * was by default, which no longer matches the new hash; undefined drops it).
 */
export function rechain(
  lines: readonly string[],
  edit: (record: Record<string, unknown>, index: number) => void,
  mac: (record: Record<string, unknown>, hash: string) => string | undefined = (record) =>
    record.mac as string | undefined,
): string[] {
  let prev = GENESIS_HASH;
  return lines.map((line, index) => {
    const record = JSON.parse(line) as Record<string, unknown>;
    edit(record, index);
    const { hash: _hash, mac: _mac, ...body } = record;
    body.prev = prev;
    const hash = digestOf(body);
    prev = hash;
    const tag = mac(record, hash);
    return canonicalJson({ ...body, hash, ...(tag === undefined ? {} : { mac: tag }) });
  });
}

/** The behaviour every JournalStore must show. */
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
      const opened = await subject.store.openWriter(sessionId, { create });
      open.push(opened);
      return opened;
    }

    it("round-trips appended events through a load, with times from the injected clock", async () => {
      const w = await writer("s1");
      const appended = await w.append([input("hello")]);
      await w.append([event("run.finished", { status: "verified", answer: "done" })]);
      const loaded = await subject.store.read("s1");
      expect(loaded).toEqual([...appended, (await w.readAll())[1]]);
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
      const loaded = await subject.store.read("s1");
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
      expect(w.length).toBe(4);
      expect(await w.append([])).toEqual([]);
      expectValidChain(await subject.store.read("s1"));
    });

    it("holds a bounded window of records, not the journal; readAll gives every record back, staged ones included", async () => {
      const w = await writer("s1");
      for (let i = 0; i < 40; i++)
        await w.append(
          Array.from({ length: 10 }, (_, j) => input(`r${i * 10 + j}`)),
          { durable: i % 3 !== 1 },
        );
      await w.append([input("staged tail")], { durable: false });
      expect(w.length).toBe(401);
      expect(w.recent.length).toBeLessThanOrEqual(2 * RECENT_RECORDS);
      expect(w.last?.seq).toBe(400);
      expect(w.recent.at(-1)).toBe(w.last);
      const all = await w.readAll();
      expect(all.map((r) => r.seq)).toEqual(Array.from({ length: 401 }, (_, i) => i));
      expect(all.at(-1)?.data).toEqual({ text: "staged tail" });
      expectValidChain(all);
      // The staged tail is the writer's, not yet storage's: a reader sees the durable prefix.
      expect(await subject.reopen().read("s1")).toEqual(all.slice(0, 400));
      await w.append([]);
      expect(await subject.reopen().read("s1")).toEqual(all);
    });

    it("readAll refuses a journal changed behind the writer instead of showing it", async () => {
      const w = await writer("s1");
      await w.append([input("one"), input("two"), input("three")]);
      const lines = await subject.lines("s1");
      await subject.replaceLines("s1", lines.slice(0, 2));
      await expect(w.readAll()).rejects.toMatchObject({ name: "JournalError" });
    });

    it("stages records that are not durable yet: in the writer at once, stored with the next durable append", async () => {
      const w = await writer("s1");
      await w.append([input("first")]);
      const syncsBefore = subject.syncs?.();
      const staged = await w.append([input("staged a"), input("staged b")], { durable: false });
      expect(staged.map((r) => r.seq)).toEqual([1, 2]);
      expect(w.length).toBe(3);
      // A reader (or a crash) sees only the durable prefix, which is a valid chain.
      expect((await subject.reopen().read("s1")).map((r) => r.seq)).toEqual([0]);
      const [next] = await w.append([input("durable")]);
      expect(next?.prev).toBe(staged[1]?.hash);
      const loaded = await subject.reopen().read("s1");
      expect(loaded.map((r) => r.data)).toEqual([
        { text: "first" },
        { text: "staged a" },
        { text: "staged b" },
        { text: "durable" },
      ]);
      expectValidChain(loaded);
      if (syncsBefore !== undefined) expect(subject.syncs?.()).toBe(syncsBefore + 1);
    });

    it("stores staged records on an empty durable append and on close", async () => {
      const w = await writer("s1");
      await w.append([input("first")]);
      await w.append([input("staged")], { durable: false });
      expect(await w.append([])).toEqual([]);
      expect((await subject.reopen().read("s1")).map((r) => r.seq)).toEqual([0, 1]);
      const syncs = subject.syncs?.();
      expect(await w.append([])).toEqual([]);
      if (syncs !== undefined) expect(subject.syncs?.()).toBe(syncs);
      await w.append([input("staged at close")], { durable: false });
      await w.close();
      expect((await subject.reopen().read("s1")).map((r) => r.seq)).toEqual([0, 1, 2]);
    });

    it("loses the staged tail when a durable write fails, and the writer stops", async () => {
      const w = await writer("s1");
      await w.append([input("durable")]);
      await w.append([input("staged a"), input("staged b")], { durable: false });
      await subject.dropWriterLock("s1");
      expect((await rejection(w.append([input("next")]))).code).toBe("LOCKED");
      // Stopped for good: neither a durable nor a staged append is taken, and close stores nothing.
      await rejection(w.append([input("again")]));
      await rejection(w.append([input("again, staged")], { durable: false }));
      await rejection(w.append([]));
      await w.close();
      expect((await subject.reopen().read("s1")).map((r) => r.data)).toEqual([{ text: "durable" }]);
      // What is stored is the durable prefix, a valid chain that the next writer continues.
      const next = await subject.reopen().openWriter("s1", { create: false });
      open.push(next);
      expect((await next.readAll()).map((r) => r.data)).toEqual([{ text: "durable" }]);
      const [after] = await next.append([input("after")]);
      expect(after?.seq).toBe(1);
      const loaded = await subject.reopen().read("s1");
      expect(loaded.map((r) => r.data)).toEqual([{ text: "durable" }, { text: "after" }]);
      expectValidChain(loaded, subject.key);
    });

    it("continues the chain after close and reopen, in another handle on the same storage", async () => {
      const first = await writer("s1");
      await first.append([input("one"), input("two")]);
      await first.close();
      const second = await subject.reopen().openWriter("s1", { create: false });
      open.push(second);
      expect((await second.readAll()).map((r) => r.data)).toEqual([{ text: "one" }, { text: "two" }]);
      const head = second.last?.hash;
      const [third] = await second.append([input("three")]);
      expect(third?.seq).toBe(2);
      expect(third?.prev).toBe(head);
      const loaded = await subject.store.read("s1");
      expect(loaded.map((r) => r.data)).toEqual([{ text: "one" }, { text: "two" }, { text: "three" }]);
      expectValidChain(loaded);
    });

    it("refuses a second writer with LOCKED naming the owner, and admits one after close", async () => {
      const first = await writer("s1");
      await first.append([input("one")]);
      const refused = await rejection(subject.store.openWriter("s1", { create: false }));
      expect(refused.code).toBe("LOCKED");
      expect(refused.message).toContain(`pid ${process.pid}`);
      expect(refused.message).toContain("started 2025-03-01T12:00:00.000Z");
      await first.close();
      const second = await writer("s1", false);
      expect(second.length).toBe(1);
    });

    it("reads without the lock while a writer holds the session", async () => {
      const w = await writer("s1");
      await w.append([input("one")]);
      expect((await subject.store.read("s1")).map((r) => r.data)).toEqual([{ text: "one" }]);
      await w.append([input("two")]);
      expect(await subject.store.read("s1")).toEqual(await w.readAll());
    });

    it("rejects an invalid event before writing anything, even within a batch", async () => {
      const w = await writer("s1");
      await w.append([input("kept")]);
      const bad = { type: "user.input", data: { text: 42 } } as unknown as AnyNewEvent;
      const unknownType = { type: "made.up", data: {} } as unknown as AnyNewEvent;
      const loneSurrogate = input("\ud800");
      // JSON-valued fields (a call's arguments) must be JSON all the way down.
      const started = (args: unknown) =>
        ({
          type: "tool.started",
          data: {
            call_id: "c1",
            name: "read_file",
            arguments: args,
            arguments_hash: "0".repeat(64),
            tool_version: "1",
            schema_digest: "0".repeat(64),
            effect: "read_only",
            batch: 0,
          },
        }) as unknown as AnyNewEvent;
      const nonJson = [
        started({ n: Number.NaN }),
        started({ nested: [{ f: () => 1 }] }),
        started({ when: new Date(0) }),
        started([1, 2]),
        started("text"),
      ];
      for (const invalid of [bad, unknownType, loneSurrogate, ...nonJson]) {
        const error = await rejection(w.append([input("would be fine"), invalid]));
        expect(error.code).toBe("INVALID_EVENT");
      }
      expect(w.length).toBe(1);
      expect((await subject.store.read("s1")).map((r) => r.data)).toEqual([{ text: "kept" }]);
      const [next] = await w.append([input("after")]);
      expect(next?.seq).toBe(1);
    });

    it("refuses appends after close", async () => {
      const w = await writer("s1");
      await w.close();
      expect((await rejection(w.append([input("late")]))).code).toBe("LOCKED");
      expect(await subject.store.read("s1")).toEqual([]);
    });

    it("reports unknown sessions and refuses to open them without create", async () => {
      expect(await subject.store.exists("nope")).toBe(false);
      expect((await rejection(subject.store.read("nope"))).code).toBe("SESSION_NOT_FOUND");
      expect((await rejection(subject.store.openWriter("nope", { create: false }))).code).toBe(
        "SESSION_NOT_FOUND",
      );
      expect(await subject.store.exists("nope")).toBe(false);
    });

    it("lists sessions sorted by id", async () => {
      for (const id of ["b-2", "a_1", "B.3", "a"]) await (await writer(id)).append([input(id)]);
      expect(await subject.store.list()).toEqual(["B.3", "a", "a_1", "b-2"]);
      expect(await subject.store.exists("a_1")).toBe(true);
    });

    it("authenticates every record with the backend's key", async () => {
      const w = await writer("s1");
      await w.append([input("one"), input("two")]);
      expect(w.keyId).toBe(subject.key.id);
      expect(w.recoveredLock).toBeUndefined();
      const reading = await subject.store.readReport("s1");
      expect(reading.trust).toEqual({ trusted: true, keyId: subject.key.id });
      expectValidChain(reading.records, subject.key);
    });

    it("refuses a journal recorded under another key, and still shows it as untrusted", async () => {
      const w = await writer("s1");
      await w.append([event("session.started", sessionStarted(subject.key.id)), input("goal")]);
      await w.close();
      const stranger = JournalKey.ephemeral();
      const other = subject.withKey(stranger);
      const refused = await rejection(other.read("s1"));
      expect(refused.code).toBe("UNTRUSTED");
      expect(refused.message).toContain(subject.key.id);
      expect(refused.message).toContain(stranger.id);
      expect(refused.message).toContain("harness journal adopt s1");
      expect((await rejection(other.openWriter("s1", { create: false }))).code).toBe("UNTRUSTED");
      const reading = await other.readReport("s1");
      expect(reading.records).toHaveLength(2);
      expect(reading.trust).toMatchObject({
        trusted: false,
        problem: "FOREIGN_KEY",
        recordedKeyId: subject.key.id,
      });
      // Refusing left the journal as it was.
      expect(await subject.lines("s1")).toHaveLength(2);
    });

    it("refuses a record changed and re-chained without the key, with or without its old tag", async () => {
      const w = await writer("s1");
      await w.append([input("one"), input("two"), input("three")]);
      await w.close();
      const original = await subject.lines("s1");
      for (const mac of [undefined, (record: Record<string, unknown>) => record.mac as string]) {
        const forged = rechain(
          original,
          (record, index) => {
            if (index === 1) record.data = { text: "forged" };
          },
          mac ?? (() => undefined),
        );
        await subject.replaceLines("s1", forged);
        const refused = await rejection(subject.store.read("s1"));
        expect(refused.code).toBe("UNTRUSTED");
        expect((await rejection(subject.store.openWriter("s1", { create: false }))).code).toBe("UNTRUSTED");
        const reading = await subject.store.readReport("s1");
        expect(reading.records[1]?.data).toEqual({ text: "forged" });
        expect(reading.trust.trusted).toBe(false);
      }
      // With the old tags kept, the first record whose tag fails is named.
      expect((await rejection(subject.store.read("s1"))).message).toContain("record seq 1 (user.input)");
    });

    it("refuses a journal with no authentication at all (an older format or another tool)", async () => {
      const w = await writer("s1");
      await w.append([input("one"), input("two")]);
      await w.close();
      await subject.replaceLines(
        "s1",
        rechain(
          await subject.lines("s1"),
          () => {},
          () => undefined,
        ),
      );
      const reading = await subject.store.readReport("s1");
      expect(reading.trust).toMatchObject({ trusted: false, problem: "UNAUTHENTICATED" });
      expect((await rejection(subject.store.read("s1"))).message).toContain("not authenticated");
    });

    it("adopts a journal only through a first journal.adopted record naming its head, after which it is trusted", async () => {
      const w = await writer("s1");
      await w.append([event("session.started", sessionStarted(subject.key.id)), input("goal")]);
      await w.close();
      const mine = JournalKey.ephemeral();
      const adopter = subject.withKey(mine);
      const { records } = await adopter.readReport("s1");
      const head = records[records.length - 1]!;
      const adopting = await adopter.openWriter("s1", { create: false, adopt: true });
      open.push(adopting);
      // Nothing else may come first, and the adoption must name the real head.
      expect((await rejection(adopting.append([input("sneaked in")]))).code).toBe("UNTRUSTED");
      const wrongHead = adoption(GENESIS_HASH, records.length, mine.id);
      expect((await rejection(adopting.append([wrongHead]))).code).toBe("UNTRUSTED");
      expect(await subject.lines("s1")).toHaveLength(2);
      await adopting.append([adoption(head.hash, records.length, mine.id), input("after adoption")]);
      await adopting.close();
      const after = await adopter.read("s1");
      expect(after.map((r) => r.type)).toEqual([
        "session.started",
        "user.input",
        "journal.adopted",
        "user.input",
      ]);
      // The adopted history is unchanged: the same bytes, now vouched for.
      expect(after.slice(0, 2)).toEqual(records);
      // The original key holder now sees a journal another key took over.
      expect((await rejection(subject.store.read("s1"))).code).toBe("UNTRUSTED");
      // An adoption record forged by someone without the key vouches for nothing.
      const forgedAdoption = rechain(await subject.lines("s1"), (record, index) => {
        if (index === 3) record.data = { text: "changed after adoption" };
      });
      await subject.replaceLines("s1", forgedAdoption);
      expect((await rejection(adopter.read("s1"))).message).toContain("record seq 3");
    });

    it("rejects session ids that are not plain names", async () => {
      await (await writer("a")).append([input("parent")]);
      const tooDeep = ["a", ..."123456789"].join("/");
      const hostile = ["", "../x", ".hidden", "a b", "x".repeat(65), "-lead", "a\0"];
      // A sub-agent's id is its parent's, "/", a label: nothing else passes as one.
      hostile.push("a/../b", "a//b", "a/.x", "/a", "a/", "a/b.c", "a/b\0", "a/..", "a/.", "a\\b");
      hostile.push(
        `${"x".repeat(65)}/b`,
        `a/${"l".repeat(33)}`,
        "a/artifacts",
        "a/Artifacts",
        "a/-b",
        tooDeep,
      );
      for (const id of hostile) {
        expect((await rejection(subject.store.openWriter(id, { create: true }))).code).toBe(
          "INVALID_SESSION_ID",
        );
        expect((await rejection(subject.store.read(id))).code).toBe("INVALID_SESSION_ID");
        expect((await rejection(subject.store.listChildren(id))).code).toBe("INVALID_SESSION_ID");
      }
      expect(await subject.store.list()).toEqual(["a"]);
      expect(await subject.store.listChildren("a")).toEqual([]);
    });

    it("keeps a sub-agent's session under its parent: its own journal, listed by the parent only", async () => {
      const parent = await writer("p");
      await parent.append([input("parent goal")]);
      const child = await writer("p/helper");
      await child.append([input("child goal"), input("child more")]);
      const grandchild = await writer("p/helper/deep_1");
      await grandchild.append([input("grandchild goal")]);
      await (await writer("p/another-2")).append([input("second child")]);
      await (await writer("q")).append([input("other root")]);

      // Each is a session of its own: its own chain, from seq 0.
      expect((await subject.store.read("p")).map((r) => r.data)).toEqual([{ text: "parent goal" }]);
      const childRecords = await subject.store.read("p/helper");
      expect(childRecords.map((r) => r.data)).toEqual([{ text: "child goal" }, { text: "child more" }]);
      expectValidChain(childRecords, subject.key);
      expect(await subject.lines("p/helper/deep_1")).toHaveLength(1);
      expect(await subject.store.exists("p/helper")).toBe(true);
      expect(await subject.store.exists("p/missing")).toBe(false);
      expect((await rejection(subject.store.read("p/missing"))).code).toBe("SESSION_NOT_FOUND");

      // The workspace's list is root sessions; each level lists its own children.
      expect(await subject.store.list()).toEqual(["p", "q"]);
      expect(await subject.store.listChildren("p")).toEqual(["p/another-2", "p/helper"]);
      expect(await subject.store.listChildren("p/helper")).toEqual(["p/helper/deep_1"]);
      expect(await subject.store.listChildren("p/helper/deep_1")).toEqual([]);
      expect(await subject.store.listChildren("q")).toEqual([]);
      expect(await subject.store.listChildren("nope")).toEqual([]);

      // One writer per session: the parent's writer does not hold its child, nor the reverse.
      expect((await rejection(subject.store.openWriter("p/helper", { create: false }))).code).toBe("LOCKED");
      await child.close();
      const again = await writer("p/helper", false);
      await again.append([input("resumed")]);
      expect(await subject.store.read("p/helper")).toHaveLength(3);
      await parent.append([input("parent goes on")]);
      expect(await subject.store.read("p")).toHaveLength(2);
    });

    it("creates a sub-agent's session only below an existing parent, and at most MAX_AGENT_DEPTH deep", async () => {
      const refused = await rejection(subject.store.openWriter("ghost/helper", { create: true }));
      expect(refused.code).toBe("SESSION_NOT_FOUND");
      expect(refused.message).toContain("parent session ghost");
      expect(await subject.store.exists("ghost")).toBe(false);
      expect(await subject.store.list()).toEqual([]);
      let id = "r";
      await (await writer(id)).append([input(id)]);
      for (const label of ["a", "b", "c", "d", "e", "f", "g", "h"]) {
        id = `${id}/${label}`;
        await (await writer(id)).append([input(id)]);
      }
      expect(id.split("/")).toHaveLength(1 + MAX_AGENT_DEPTH);
      expect((await subject.store.read(id)).map((r) => r.data)).toEqual([{ text: id }]);
      expect(await subject.store.listChildren("r/a/b/c/d/e/f/g")).toEqual([id]);
      expect((await rejection(subject.store.openWriter(`${id}/i`, { create: true }))).code).toBe(
        "INVALID_SESSION_ID",
      );
    });
  });
}
