import { existsSync, readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileJournalStore } from "../../src/journal/file-store.js";
import { GroupCommit, nodeSyncIo, type SyncIo } from "../../src/journal/group-commit.js";
import { verifyJournal } from "../../src/journal/verify.js";
import { fixedClock, input, rejection } from "./contract.js";
import { eventsPath, lockPath, type TempHarness, tempHarness } from "./helpers.js";

/**
 * The real disk, except that the next file fsync, once armed, waits until the test lets it go
 * (or fails it): a slow or failing disk under one session while the others go on.
 */
class GatedDisk implements SyncIo {
  #armed: "hold" | "fail" | undefined;
  #release: (() => void) | undefined;
  /** The file fsyncs that ran, in order (descriptor numbers). */
  readonly files: number[] = [];

  arm(how: "hold" | "fail"): void {
    this.#armed = how;
  }
  release(): void {
    this.#release?.();
    this.#release = undefined;
  }
  async file(fd: number): Promise<void> {
    this.files.push(fd);
    const armed = this.#armed;
    this.#armed = undefined;
    if (armed === "fail") throw Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    if (armed === "hold") await new Promise<void>((resolve) => (this.#release = resolve));
    await nodeSyncIo.file(fd);
  }
  directory(path: string): Promise<void> {
    return nodeSyncIo.directory(path);
  }
}

function watch(promise: Promise<unknown>): { settled: boolean; error?: unknown } {
  const seen: { settled: boolean; error?: unknown } = { settled: false };
  promise.then(
    () => {
      seen.settled = true;
    },
    (error: unknown) => {
      seen.settled = true;
      seen.error = error;
    },
  );
  return seen;
}

/** Wait until `check` holds, yielding to the event loop (and so to the pool's callbacks) between looks. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(check()).toBe(true);
}

const lines = (h: TempHarness, session: string) =>
  readFileSync(eventsPath(h.harnessDir, session), "utf8").split("\n").filter(Boolean);

let h: TempHarness;
let disk: GatedDisk;
let store: FileJournalStore;
beforeEach(() => {
  const now = fixedClock();
  h = tempHarness(now);
  disk = new GatedDisk();
  store = new FileJournalStore(h.harnessDir, { now, commit: new GroupCommit(3, disk) });
});
afterEach(() => {
  disk.release();
  h.cleanup();
});

describe("FileJournalStore through a group commit", () => {
  it("resolves one session's append while another session's fsync is still on the disk", async () => {
    const slow = await store.openWriter("slow", { create: true });
    const fast = await store.openWriter("fast", { create: true });
    await slow.append([input("first")]);
    await fast.append([input("first")]);
    disk.arm("hold");
    const held = watch(slow.append([input("waits for its disk")]));
    // Written at once (a crash of the process keeps it), durable only once its fsync is done.
    expect(lines(h, "slow")).toHaveLength(2);
    for (let i = 0; i < 3; i++) await fast.append([input(`goes on ${i}`)]);
    expect(lines(h, "fast")).toHaveLength(4);
    expect(held.settled).toBe(false);
    disk.release();
    await until(() => held.settled);
    expect(held.error).toBeUndefined();
    await slow.close();
    await fast.close();
    expect((await verifyJournal(eventsPath(h.harnessDir, "slow"))).ok).toBe(true);
  });

  it("counts the fsyncs a session's appends waited for: the file, and a new session's folders once", async () => {
    const writer = await store.openWriter("count", { create: true });
    await writer.append([input("one")]);
    // The file, then the session folder, sessions/ and .harness.
    expect(store.syncs.fsyncs).toBe(1 + 3);
    await writer.append([input("two")]);
    expect(store.syncs.fsyncs).toBe(1 + 3 + 1);
    await writer.close();
  });

  it("a failed fsync rejects the append, cuts the file back to its last durable record, and stops the writer", async () => {
    const writer = await store.openWriter("broken", { create: true });
    await writer.append([input("durable")]);
    const durable = readFileSync(eventsPath(h.harnessDir, "broken"));
    disk.arm("fail");
    const error = await rejection(writer.append([input("lost"), input("lost too")]));
    expect(error.code).toBe("IO");
    expect(error.message).toContain("EIO");
    expect(readFileSync(eventsPath(h.harnessDir, "broken"))).toEqual(durable);
    expect((await rejection(writer.append([input("after")]))).code).toBe("IO");
    await writer.close();
    expect((await verifyJournal(eventsPath(h.harnessDir, "broken"))).ok).toBe(true);
  });

  it("a close releases the lock at once and keeps the file open until its last fsync is done", async () => {
    const writer = await store.openWriter("closing", { create: true });
    await writer.append([input("one")]);
    writer.append([input("staged")], { durable: false });
    disk.arm("hold");
    const closing = watch(writer.close());
    // The staged record is written and the lock is gone before the fsync returns.
    expect(lines(h, "closing")).toHaveLength(2);
    expect(existsSync(lockPath(h.harnessDir, "closing"))).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(closing.settled).toBe(false);
    disk.release();
    await until(() => closing.settled);
    expect(closing.error).toBeUndefined();
    const reopened = await store.openWriter("closing", { create: false });
    expect((await reopened.readAll()).map((r) => r.type)).toEqual(["user.input", "user.input"]);
    await reopened.close();
  });
});
