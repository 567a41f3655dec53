import { appendFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repairJournal } from "../../src/journal/repair.js";
import { verifyJournal } from "../../src/journal/verify.js";
import { expectValidChain, fixedClock, input, rejection } from "./contract.js";
import { encodedLine, eventsPath, lockPath, seedSession, type TempHarness, tempHarness } from "./helpers.js";

describe("repairJournal", () => {
  let h: TempHarness;
  const now = () => new Date("2025-04-01T08:30:00.000Z");
  beforeEach(() => {
    h = tempHarness(fixedClock());
  });
  afterEach(() => h.cleanup());

  it("backs up a torn journal byte for byte, then cuts it to the last complete record", async () => {
    const intact = await seedSession(h, "s1", 3);
    const path = eventsPath(h.harnessDir, "s1");
    const { line } = encodedLine(input("cut short"), 3);
    appendFileSync(path, line.slice(0, 50));
    const torn = readFileSync(path);

    const result = await repairJournal(h.harnessDir, "s1", { now });
    expect(result).toEqual({
      backup: `${path}.bak-2025-04-01T08-30-00.000Z`,
      keptRecords: 3,
      droppedBytes: 50,
      droppedLines: 1,
    });
    expect(readFileSync(result.backup!)).toEqual(torn);
    expect(readFileSync(path)).toEqual(intact);
    expect(readdirSync(dirname(path)).sort()).toEqual(["events.jsonl", basename(result.backup!)]);

    const records = await h.store.read("s1");
    expect(records.map((r) => r.data)).toEqual([
      { text: "message 0" },
      { text: "message 1" },
      { text: "message 2" },
    ]);
    const writer = await h.store.openWriter("s1", { create: false });
    const [next] = await writer.append([input("after repair")]);
    expect(next?.seq).toBe(3);
    await writer.close();
    expectValidChain(await h.store.read("s1"));
  });

  it("cuts at the first damaged record and counts every dropped line", async () => {
    await seedSession(h, "s1", 5);
    const path = eventsPath(h.harnessDir, "s1");
    const original = readFileSync(path);
    const damaged = Buffer.from(original);
    damaged[damaged.indexOf("message 2") + 8] = "9".charCodeAt(0);
    writeFileSync(path, damaged);
    const prefix = original.subarray(0, original.indexOf("\n", original.indexOf("message 1")) + 1);

    const result = await repairJournal(h.harnessDir, "s1", { now });
    expect(result).toMatchObject({
      keptRecords: 2,
      droppedLines: 3,
      droppedBytes: damaged.length - prefix.length,
    });
    expect(readFileSync(result.backup!)).toEqual(damaged);
    expect(readFileSync(path)).toEqual(prefix);
    expect(await verifyJournal(path)).toMatchObject({ ok: true });
  });

  it("changes nothing and takes no backup when the journal verifies", async () => {
    const intact = await seedSession(h, "s1", 2);
    expect(await repairJournal(h.harnessDir, "s1", { now })).toEqual({
      backup: null,
      keptRecords: 2,
      droppedBytes: 0,
      droppedLines: 0,
    });
    expect(readFileSync(eventsPath(h.harnessDir, "s1"))).toEqual(intact);
    expect(readdirSync(dirname(eventsPath(h.harnessDir, "s1")))).toEqual(["events.jsonl"]);
  });

  it("never overwrites an earlier backup", async () => {
    await seedSession(h, "s1", 1);
    const path = eventsPath(h.harnessDir, "s1");
    appendFileSync(path, "{");
    const first = await repairJournal(h.harnessDir, "s1", { now });
    appendFileSync(path, "{}");
    const second = await repairJournal(h.harnessDir, "s1", { now });
    expect(second.backup).toBe(`${first.backup}-1`);
    expect(readFileSync(first.backup!, "utf8").endsWith("{")).toBe(true);
    expect(readFileSync(second.backup!, "utf8").endsWith("{}")).toBe(true);
  });

  it("refuses while a live writer holds the session, changing nothing", async () => {
    await seedSession(h, "s1", 1);
    const writer = await h.store.openWriter("s1", { create: false });
    const error = await rejection(repairJournal(h.harnessDir, "s1", { now }));
    expect(error.code).toBe("LOCKED");
    expect(readdirSync(dirname(eventsPath(h.harnessDir, "s1"))).sort()).toEqual([
      "events.jsonl",
      "writer.lock",
    ]);
    await writer.close();
  });

  it("releases its own lock and reports unknown sessions", async () => {
    await seedSession(h, "s1", 1);
    appendFileSync(eventsPath(h.harnessDir, "s1"), "x");
    await repairJournal(h.harnessDir, "s1", { now });
    expect(readdirSync(dirname(lockPath(h.harnessDir, "s1")))).not.toContain("writer.lock");
    expect((await rejection(repairJournal(h.harnessDir, "missing"))).code).toBe("SESSION_NOT_FOUND");
  });
});

describe("verifyJournal", () => {
  let h: TempHarness;
  beforeEach(() => {
    h = tempHarness();
  });
  afterEach(() => h.cleanup());

  it("returns the records of a sound journal and the verified prefix of a damaged one", async () => {
    await seedSession(h, "s1", 3);
    const path = eventsPath(h.harnessDir, "s1");
    const sound = await verifyJournal(path);
    expect(sound.ok && sound.records.map((r) => r.seq)).toEqual([0, 1, 2]);

    const bytes = readFileSync(path);
    const secondLineEnd = bytes.indexOf("\n", bytes.indexOf("\n") + 1) + 1;
    writeFileSync(path, Buffer.concat([bytes.subarray(0, secondLineEnd), Buffer.from("garbage\n")]));
    const damaged = await verifyJournal(path);
    expect(damaged).toMatchObject({ ok: false, code: "CORRUPT", validRecords: 2, validBytes: secondLineEnd });
    expect(damaged.ok === false && damaged.message).toContain("line 3");
  });
});
