import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileJournalStore } from "../../src/journal/file-store.js";
import { unlockSession } from "../../src/journal/lock.js";
import { verifyJournal } from "../../src/journal/verify.js";
import { event, GENESIS_HASH } from "../../src/journal/vocabulary.js";
import { canonicalJson } from "../../src/shared/hash.js";
import { processStartTime } from "../../src/shared/proc-stat.js";
import { expectValidChain, input, journalContract, rejection } from "./contract.js";
import {
  encodedLine,
  eventsPath,
  forgeLine,
  lockPath,
  readLines,
  seedSession,
  type TempHarness,
  tempHarness,
  writeLines,
} from "./helpers.js";

journalContract("FileJournalStore", async (now) => {
  const h = tempHarness(now);
  return {
    store: h.store,
    syncs: () => h.store.syncs.fsyncs,
    reopen: () => new FileJournalStore(h.harnessDir, { now }),
    key: h.store.key,
    withKey: (key) => new FileJournalStore(h.harnessDir, { now, key }),
    lines: async (sessionId) => readLines(eventsPath(h.harnessDir, sessionId)),
    replaceLines: async (sessionId, lines) => writeLines(eventsPath(h.harnessDir, sessionId), lines),
    dropWriterLock: async (sessionId) => rmSync(lockPath(h.harnessDir, sessionId)),
    cleanup: async () => h.cleanup(),
  };
});

describe("FileJournalStore on disk", () => {
  let h: TempHarness;
  beforeEach(() => {
    h = tempHarness();
  });
  afterEach(() => h.cleanup());

  it("stores one canonical JSON line per record under sessions/<id>/events.jsonl", async () => {
    const writer = await h.store.openWriter("s1", { create: true });
    const records = await writer.append([input("hello"), event("run.cancelled", { reason: "user" })]);
    await writer.close();
    const text = readFileSync(join(h.harnessDir, "sessions", "s1", "events.jsonl"), "utf8");
    expect(text).toBe(records.map((record) => `${canonicalJson(record)}\n`).join(""));
    expect(readdirSync(join(h.harnessDir, "sessions", "s1"))).toEqual(["events.jsonl"]);
  });

  it("holds a lock file naming this process while a writer is open and removes it on close", async () => {
    const writer = await h.store.openWriter("s1", { create: true });
    const lock: unknown = JSON.parse(readFileSync(lockPath(h.harnessDir, "s1"), "utf8"));
    expect(lock).toEqual({
      pid: process.pid,
      host: hostname(),
      started_at: "2025-03-01T12:00:00.000Z",
      proc_start: processStartTime(process.pid),
    });
    expect(processStartTime(process.pid)).toMatch(/^\d+$/);
    await writer.close();
    expect(existsSync(lockPath(h.harnessDir, "s1"))).toBe(false);
  });

  it("leaves a lock that is no longer its own in place on close", async () => {
    const writer = await h.store.openWriter("s1", { create: true });
    const foreign = '{"pid":1,"host":"elsewhere","started_at":"x","proc_start":null}\n';
    writeFileSync(lockPath(h.harnessDir, "s1"), foreign);
    await writer.close();
    expect(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")).toBe(foreign);
  });

  it("stops appending when its lock was removed, and writes nothing", async () => {
    const writer = await h.store.openWriter("s1", { create: true });
    await writer.append([input("one")]);
    const before = readFileSync(eventsPath(h.harnessDir, "s1"));
    expect((await unlockSession(h.harnessDir, "s1", { force: true })).outcome).toBe("removed");
    expect((await rejection(writer.append([input("two")]))).code).toBe("LOCKED");
    expect((await rejection(writer.append([input("three")]))).code).toBe("IO");
    expect(readFileSync(eventsPath(h.harnessDir, "s1"))).toEqual(before);
    await writer.close();
  });

  it("stops appending when the file changed behind the writer", async () => {
    const writer = await h.store.openWriter("s1", { create: true });
    await writer.append([input("one")]);
    const { line } = encodedLine(input("intruder"), 1, writer.recent[0]?.hash);
    appendFileSync(eventsPath(h.harnessDir, "s1"), `${line}\n`);
    const changed = readFileSync(eventsPath(h.harnessDir, "s1"));
    expect((await rejection(writer.append([input("two")]))).code).toBe("CORRUPT");
    expect(readFileSync(eventsPath(h.harnessDir, "s1"))).toEqual(changed);
    await writer.close();
  });

  it("opens an existing session with create: true instead of replacing it", async () => {
    await seedSession(h, "s1", 2);
    const writer = await h.store.openWriter("s1", { create: true });
    expect(writer.length).toBe(2);
    await writer.close();
  });

  it("lists only directories that hold a journal", async () => {
    await seedSession(h, "zeta", 1);
    await seedSession(h, "alpha", 1);
    mkdirSync(join(h.harnessDir, "sessions", "empty-dir"));
    writeFileSync(join(h.harnessDir, "sessions", "stray-file"), "");
    expect(await h.store.list()).toEqual(["alpha", "zeta"]);
  });

  describe("sub-agent sessions", () => {
    it("keeps a child's journal inside its parent's folder, and the workspace list to root sessions", async () => {
      await seedSession(h, "p", 1);
      const before = h.store.syncs.fsyncs;
      const child = await h.store.openWriter("p/helper", { create: true });
      const records = await child.append([input("child")]);
      // One fsync of the file, then the new folder and each one above it up to .harness.
      expect(h.store.syncs.fsyncs - before).toBe(1 + 4);
      await child.close();
      const folder = join(h.harnessDir, "sessions", "p", "helper");
      expect(readFileSync(join(folder, "events.jsonl"), "utf8")).toBe(`${canonicalJson(records[0])}\n`);
      expect(readdirSync(folder)).toEqual(["events.jsonl"]);
      expect(readdirSync(join(h.harnessDir, "sessions")).sort()).toEqual(["p"]);
      expect(readdirSync(join(h.harnessDir, "sessions", "p")).sort()).toEqual(["events.jsonl", "helper"]);
      // Folders that are not sub-agent sessions are not children: artifacts, a stray or dotted one.
      mkdirSync(join(h.harnessDir, "sessions", "p", "artifacts"));
      writeFileSync(join(h.harnessDir, "sessions", "p", "artifacts", "events.jsonl"), "");
      mkdirSync(join(h.harnessDir, "sessions", "p", "empty"));
      mkdirSync(join(h.harnessDir, "sessions", "p", "v.2"));
      writeFileSync(join(h.harnessDir, "sessions", "p", "v.2", "events.jsonl"), "");
      expect(await h.store.list()).toEqual(["p"]);
      expect(await h.store.listChildren("p")).toEqual(["p/helper"]);
      expect((await verifyJournal(join(folder, "events.jsonl"))).ok).toBe(true);
    });

    it("names the child in a damaged child journal's repair advice", async () => {
      await seedSession(h, "p", 1);
      const child = await h.store.openWriter("p/sessions", { create: true });
      await child.append([input("one"), input("two")]);
      await child.close();
      const path = join(h.harnessDir, "sessions", "p", "sessions", "events.jsonl");
      appendFileSync(path, '{"seq":2');
      const result = await verifyJournal(path);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.message).toContain("harness journal repair p/sessions");
    });

    it("refuses a child reached through a link in its parent's folder", async () => {
      await seedSession(h, "p", 1);
      await seedSession(h, "q", 1);
      const q = await h.store.openWriter("q", { create: false });
      await q.close();
      const elsewhere = join(h.harnessDir, "..", "elsewhere");
      mkdirSync(join(elsewhere, "inner"), { recursive: true });
      symlinkSync(elsewhere, join(h.harnessDir, "sessions", "p", "helper"));
      const refused = await rejection(h.store.openWriter("p/helper/inner", { create: true }));
      expect(refused.code).toBe("UNTRUSTED");
      expect(refused.message).toContain(".harness/sessions/p/helper");
      expect(readdirSync(join(elsewhere, "inner"))).toEqual([]);
      expect(await h.store.listChildren("p")).toEqual([]);
    });
  });

  it("requires an absolute .harness path", () => {
    expect(() => new FileJournalStore(".harness")).toThrow(TypeError);
  });

  describe("torn tail", () => {
    it("is refused by read and openWriter without changing a byte or leaving a lock", async () => {
      await seedSession(h, "s1", 3);
      const path = eventsPath(h.harnessDir, "s1");
      const { line } = encodedLine(input("cut short"), 3);
      appendFileSync(path, line.slice(0, 40));
      const torn = readFileSync(path);

      const onRead = await rejection(h.store.read("s1"));
      expect(onRead.code).toBe("TORN_TAIL");
      expect(onRead.message).toContain("harness journal repair s1");
      const onOpen = await rejection(h.store.openWriter("s1", { create: false }));
      expect(onOpen.code).toBe("TORN_TAIL");

      expect(readFileSync(path)).toEqual(torn);
      expect(existsSync(lockPath(h.harnessDir, "s1"))).toBe(false);
      const verified = await verifyJournal(path);
      expect(verified).toMatchObject({ ok: false, code: "TORN_TAIL", validRecords: 3 });
      expect(verified.ok === false && verified.validBytes).toBe(torn.length - 40);
    });

    it("is read as an append in flight while a live writer holds the lock", async () => {
      await seedSession(h, "s1", 1);
      const path = eventsPath(h.harnessDir, "s1");
      const writer = await h.store.openWriter("s1", { create: false });
      const { line } = encodedLine(input("in flight"), 1, writer.recent[0]?.hash);
      appendFileSync(path, line.slice(0, 30));
      const finish = setTimeout(() => appendFileSync(path, `${line.slice(30)}\n`), 15);
      try {
        const records = await h.store.read("s1");
        expect(records.map((r) => r.data)).toEqual([{ text: "message 0" }, { text: "in flight" }]);
      } finally {
        clearTimeout(finish);
        await writer.close();
      }
    });

    it("is still refused while a writer holds the lock if it never completes", async () => {
      await seedSession(h, "s1", 1);
      const writer = await h.store.openWriter("s1", { create: false });
      appendFileSync(eventsPath(h.harnessDir, "s1"), "{");
      expect((await rejection(h.store.read("s1"))).code).toBe("TORN_TAIL");
      await writer.close();
    });

    it("is refused even when the last line is a complete record missing only its newline", async () => {
      const original = await seedSession(h, "s1", 2);
      const path = eventsPath(h.harnessDir, "s1");
      writeFileSync(path, original.subarray(0, original.length - 1));
      expect((await rejection(h.store.read("s1"))).code).toBe("TORN_TAIL");
    });
  });

  describe("damage detection", () => {
    it("reports a modified byte in a middle record as TAMPERED naming its seq", async () => {
      await seedSession(h, "s1", 4);
      const path = eventsPath(h.harnessDir, "s1");
      const bytes = readFileSync(path);
      const at = bytes.indexOf("message 2");
      bytes[at + "message ".length] = "7".charCodeAt(0);
      writeFileSync(path, bytes);
      const error = await rejection(h.store.read("s1"));
      expect(error.code).toBe("TAMPERED");
      expect(error.message).toContain("seq 2");
      expect(readFileSync(path)).toEqual(bytes);
    });

    it("reports a changed hash field as TAMPERED", async () => {
      await seedSession(h, "s1", 3);
      const path = eventsPath(h.harnessDir, "s1");
      const lines = readLines(path);
      const record = JSON.parse(lines[1]!);
      record.hash = "f".repeat(64);
      lines[1] = canonicalJson(record);
      writeLines(path, lines);
      const error = await rejection(h.store.read("s1"));
      expect(error.code).toBe("TAMPERED");
      expect(error.message).toContain("seq 1");
    });

    it("reports a deleted line as CORRUPT at the gap", async () => {
      await seedSession(h, "s1", 4);
      const path = eventsPath(h.harnessDir, "s1");
      const lines = readLines(path);
      lines.splice(1, 1);
      writeLines(path, lines);
      const error = await rejection(h.store.read("s1"));
      expect(error.code).toBe("CORRUPT");
      expect(error.message).toContain("expected seq 1");
      expect(error.message).toContain("holds seq 2");
    });

    it("reports reordered lines as CORRUPT", async () => {
      await seedSession(h, "s1", 4);
      const path = eventsPath(h.harnessDir, "s1");
      const lines = readLines(path);
      [lines[1], lines[2]] = [lines[2]!, lines[1]!];
      writeLines(path, lines);
      const error = await rejection(h.store.read("s1"));
      expect(error.code).toBe("CORRUPT");
      expect(error.message).toContain("expected seq 1");
    });

    it("reports a correctly hashed record with the wrong prev as CORRUPT", async () => {
      await seedSession(h, "s1", 3);
      const path = eventsPath(h.harnessDir, "s1");
      const lines = readLines(path);
      lines[2] = encodedLine(input("replaced"), 2, GENESIS_HASH).line;
      writeLines(path, lines);
      const error = await rejection(h.store.read("s1"));
      expect(error.code).toBe("CORRUPT");
      expect(error.message).toContain("seq 2");
      expect(error.message).toContain("prev");
    });

    it("reports an unknown event type as CORRUPT", async () => {
      writeSession(h, "s1", [forgeLine({ seq: 0, type: "made.up", data: { x: 1 }, prev: GENESIS_HASH })]);
      const error = await rejection(h.store.read("s1"));
      expect(error.code).toBe("CORRUPT");
      expect(error.message).toContain('unknown event type "made.up"');
    });

    it("reports data that fails its schema as CORRUPT", async () => {
      writeSession(h, "s1", [
        forgeLine({ seq: 0, type: "user.input", data: { text: 5 }, prev: GENESIS_HASH }),
      ]);
      const error = await rejection(h.store.read("s1"));
      expect(error.code).toBe("CORRUPT");
      expect(error.message).toContain("schema");
    });

    it("reports extra or missing record fields and non-JSON lines as CORRUPT", async () => {
      const good = encodedLine(input("x"), 0);
      const extra = JSON.parse(good.line);
      extra.note = "extra";
      for (const line of [
        canonicalJson(extra),
        "not json",
        "[1,2]",
        "",
        good.line.replace('"prev"', '"prv"'),
      ]) {
        writeSession(h, "s1", [line]);
        expect((await rejection(h.store.read("s1"))).code).toBe("CORRUPT");
      }
    });

    it("reports a record re-serialized in another form as TAMPERED, though its values still hash right", async () => {
      const { line } = encodedLine(event("user.input", { text: "héllo ✓" }), 0);
      const record = JSON.parse(line);
      const reordered = JSON.stringify({
        seq: record.seq,
        type: record.type,
        time: record.time,
        data: record.data,
        prev: record.prev,
        hash: record.hash,
      });
      for (const variant of [reordered, line.replace("é", "\\u00e9"), `${line}\r`, line.replace(":", ": ")]) {
        writeSession(h, "s1", [variant]);
        const error = await rejection(h.store.read("s1"));
        expect(error.code).toBe("TAMPERED");
        expect(error.message).toContain("seq 0");
      }
    });

    it("reports bytes that are not UTF-8 as CORRUPT rather than reading them as U+FFFD", async () => {
      const { line } = encodedLine(event("user.input", { text: "\ufffd" }), 0);
      const bytes = Buffer.from(`${line}\n`, "utf8");
      const at = bytes.indexOf(Buffer.from("\ufffd", "utf8"));
      const invalid = Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff]), bytes.subarray(at + 3)]);
      mkdirSync(join(h.harnessDir, "sessions", "s1"), { recursive: true });
      writeFileSync(eventsPath(h.harnessDir, "s1"), invalid);
      const error = await rejection(h.store.read("s1"));
      expect(error.code).toBe("CORRUPT");
      expect(error.message).toContain("UTF-8");
    });

    it("keeps integer-like and non-ASCII keys in RFC 8785 order through a round trip", async () => {
      const writer = await h.store.openWriter("s1", { create: true });
      const args = {
        "10": 1,
        "9": 2,
        b: [{ z: null, a: true }],
        "\u00e9": "x",
        "\u20ac": 1,
        "\ud83d\ude00": 2,
        "\ufb33": 3,
      };
      const [record] = await writer.append([
        event("tool.started", {
          call_id: "c1",
          name: "t",
          arguments: args,
          arguments_hash: "a".repeat(64),
          tool_version: "1",
          schema_digest: "b".repeat(64),
          effect: "read",
          batch: 0,
        }),
      ]);
      await writer.close();
      const text = readFileSync(eventsPath(h.harnessDir, "s1"), "utf8");
      expect(text).toContain(
        '"arguments":{"10":1,"9":2,"b":[{"a":true,"z":null}],"\u00e9":"x","\u20ac":1,"\ud83d\ude00":2,"\ufb33":3}',
      );
      const loaded = await h.store.read("s1");
      expect(loaded).toEqual([record]);
      expectValidChain(loaded);
    });

    it("never reports absolute host paths in errors", async () => {
      await seedSession(h, "s1", 2);
      appendFileSync(eventsPath(h.harnessDir, "s1"), "{");
      const error = await rejection(h.store.read("s1"));
      expect(error.message).not.toContain(h.harnessDir);
    });
  });

  it("keeps file permissions private", async () => {
    await seedSession(h, "s1", 1);
    expect(statSync(eventsPath(h.harnessDir, "s1")).mode & 0o777).toBe(0o600);
  });
});

function writeSession(h: TempHarness, sessionId: string, lines: string[]): void {
  mkdirSync(join(h.harnessDir, "sessions", sessionId), { recursive: true });
  writeLines(eventsPath(h.harnessDir, sessionId), lines);
}
