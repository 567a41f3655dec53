import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileJournalStore } from "../../src/journal/file-store.js";
import { FsyncThreads } from "../../src/journal/fsync-threads.js";
import { GroupCommit } from "../../src/journal/group-commit.js";
import { JournalKey } from "../../src/journal/key.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-fsync-threads-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("FsyncThreads", () => {
  it("fsyncs files and directories on at most `max` threads, all at once when asked at once", async () => {
    const threads = new FsyncThreads(3);
    try {
      const fds = Array.from({ length: 8 }, (_, i) => openSync(join(dir, `f${i}`), "a"));
      for (const fd of fds) writeSync(fd, "a line\n");
      await Promise.all([...fds.map((fd) => threads.file(fd)), threads.directory(dir)]);
      expect(threads.threads).toBeGreaterThanOrEqual(1);
      expect(threads.threads).toBeLessThanOrEqual(3);
      for (const fd of fds) closeSync(fd);
    } finally {
      await threads.close();
    }
    expect(threads.threads).toBe(0);
  });

  it("rejects with the errno code the thread met, and goes on serving", async () => {
    const threads = new FsyncThreads(1);
    try {
      // No process has this many files open: never a descriptor.
      await expect(threads.file(999_999)).rejects.toMatchObject({ code: "EBADF" });
      await expect(threads.directory(join(dir, "missing"))).rejects.toMatchObject({ code: "ENOENT" });
      await expect(threads.directory(dir)).resolves.toBeUndefined();
    } finally {
      await threads.close();
    }
  });

  it("makes many sessions' appends durable through a widened group commit, each journal whole", async () => {
    const threads = new FsyncThreads(4);
    const commit = new GroupCommit(1);
    commit.widen(threads, 4);
    const store = new FileJournalStore(join(dir, ".harness"), { key: JournalKey.ephemeral(), commit });
    try {
      const ids = Array.from({ length: 6 }, (_, i) => `s${i}`);
      await Promise.all(
        ids.map(async (id) => {
          const writer = await store.openWriter(id, { create: true });
          for (let turn = 1; turn <= 5; turn++)
            await writer.append([{ type: "user.input", data: { text: `t${turn}`, turn } }]);
          await writer.close();
        }),
      );
      // More fsyncs were wanted at once than the pool's one: the threads took the rest.
      expect(threads.threads).toBeGreaterThan(0);
      for (const id of ids) {
        const lines = readFileSync(join(dir, ".harness", "sessions", id, "events.jsonl"), "utf8")
          .trim()
          .split("\n");
        expect(lines.map((line) => (JSON.parse(line) as { data: { text: string } }).data.text)).toEqual([
          "t1",
          "t2",
          "t3",
          "t4",
          "t5",
        ]);
        expect((await store.read(id)).length).toBe(5);
      }
      // Every session's file once per append, plus its folders (session, sessions/, .harness) once.
      expect(store.syncs.fsyncs).toBeGreaterThanOrEqual(6 * 5);
    } finally {
      await threads.close();
    }
  });
});
