import { describe, expect, it } from "vitest";
import { GroupCommit, type SyncIo } from "../../src/journal/group-commit.js";

/** A disk whose every fsync waits until the test finishes it: what started, in order, and what is in flight. */
class HeldDisk implements SyncIo {
  readonly started: string[] = [];
  readonly #held = new Map<string, { resolve: () => void; reject: (error: Error) => void }[]>();

  file(fd: number): Promise<void> {
    return this.#hold(`fd:${fd}`);
  }
  directory(path: string): Promise<void> {
    return this.#hold(`dir:${path}`);
  }
  #hold(key: string): Promise<void> {
    this.started.push(key);
    return new Promise((resolve, reject) => {
      const list = this.#held.get(key) ?? [];
      list.push({ resolve, reject });
      this.#held.set(key, list);
    });
  }
  inFlight(): string[] {
    return [...this.#held.entries()].filter(([, list]) => list.length > 0).map(([key]) => key);
  }
  /** Finish the oldest fsync of `key` (with an error when given). */
  finish(key: string, error?: Error): void {
    const next = this.#held.get(key)?.shift();
    if (next === undefined) throw new Error(`no fsync of ${key} in flight`);
    if (error) next.reject(error);
    else next.resolve();
  }
}

/** Let settled promises run their handlers. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function watch(promise: Promise<void>): { state: "pending" | "resolved" | "rejected"; error?: unknown } {
  const seen: { state: "pending" | "resolved" | "rejected"; error?: unknown } = { state: "pending" };
  promise.then(
    () => {
      seen.state = "resolved";
    },
    (error: unknown) => {
      seen.state = "rejected";
      seen.error = error;
    },
  );
  return seen;
}

describe("GroupCommit", () => {
  it("covers requests made while a file's fsync runs with one later fsync, never with the one already running", async () => {
    const disk = new HeldDisk();
    const commit = new GroupCommit(4, disk);
    const counter = { fsyncs: 0 };
    const first = watch(commit.sync(7, [], counter));
    // Written after the first fsync began: that fsync may not cover them.
    const second = watch(commit.sync(7, [], counter));
    const third = watch(commit.sync(7, [], counter));
    expect(disk.started).toEqual(["fd:7"]);
    disk.finish("fd:7");
    await settle();
    expect([first.state, second.state, third.state]).toEqual(["resolved", "pending", "pending"]);
    // One fsync for both waiting requests.
    expect(disk.started).toEqual(["fd:7", "fd:7"]);
    disk.finish("fd:7");
    await settle();
    expect([second.state, third.state]).toEqual(["resolved", "resolved"]);
    expect(counter.fsyncs).toBe(2);
    expect(commit.pending).toBe(0);
  });

  it("lets one session's request resolve while another session's fsync is still on the disk", async () => {
    const disk = new HeldDisk();
    const commit = new GroupCommit(4, disk);
    const slow = watch(commit.sync(3, [], { fsyncs: 0 }));
    const fast = watch(commit.sync(4, [], { fsyncs: 0 }));
    // Both files' fsyncs run at once: ready together, committed together.
    expect(disk.inFlight().sort()).toEqual(["fd:3", "fd:4"]);
    disk.finish("fd:4");
    await settle();
    expect(fast.state).toBe("resolved");
    expect(slow.state).toBe("pending");
    disk.finish("fd:3");
    await settle();
    expect(slow.state).toBe("resolved");
  });

  it("runs at most `parallel` fsyncs at once and serves waiting files in the order they became ready", async () => {
    const disk = new HeldDisk();
    const commit = new GroupCommit(2, disk);
    const all = [10, 11, 12, 13].map((fd) => watch(commit.sync(fd, [], { fsyncs: 0 })));
    expect(disk.inFlight().sort()).toEqual(["fd:10", "fd:11"]);
    disk.finish("fd:11");
    await settle();
    expect(disk.inFlight().sort()).toEqual(["fd:10", "fd:12"]);
    disk.finish("fd:10");
    disk.finish("fd:12");
    await settle();
    expect(disk.inFlight()).toEqual(["fd:13"]);
    disk.finish("fd:13");
    await settle();
    expect(all.map((w) => w.state)).toEqual(["resolved", "resolved", "resolved", "resolved"]);
    expect(disk.started).toEqual(["fd:10", "fd:11", "fd:12", "fd:13"]);
  });

  it("fsyncs a directory that sessions waiting together need once for all of them", async () => {
    const disk = new HeldDisk();
    // One thread: everything after the first fsync waits in line, as on a busy pool.
    const commit = new GroupCommit(1, disk);
    const counter = { fsyncs: 0 };
    const a = watch(commit.sync(20, ["/h/sessions/a", "/h/sessions", "/h"], counter));
    const b = watch(commit.sync(21, ["/h/sessions/b", "/h/sessions", "/h"], counter));
    while (disk.inFlight().length > 0) {
      disk.finish(disk.inFlight()[0]!);
      await settle();
    }
    expect([a.state, b.state]).toEqual(["resolved", "resolved"]);
    expect(disk.started).toEqual([
      "fd:20",
      "dir:/h/sessions/a",
      "dir:/h/sessions",
      "dir:/h",
      "fd:21",
      "dir:/h/sessions/b",
    ]);
    expect(counter.fsyncs).toBe(6);
  });

  it("never lets a directory fsync that began before a request stand for it", async () => {
    const disk = new HeldDisk();
    const commit = new GroupCommit(8, disk);
    const a = watch(commit.sync(20, ["/h"], { fsyncs: 0 }));
    const b = watch(commit.sync(21, ["/h"], { fsyncs: 0 }));
    disk.finish("fd:20");
    disk.finish("fd:21");
    disk.finish("dir:/h");
    await settle();
    expect([a.state, b.state]).toEqual(["resolved", "pending"]);
    disk.finish("dir:/h");
    await settle();
    expect(b.state).toBe("resolved");
  });

  it("rejects every request a failed fsync covered, before the next fsync of that file starts", async () => {
    const disk = new HeldDisk();
    const commit = new GroupCommit(4, disk);
    const counter = { fsyncs: 0 };
    const first = watch(commit.sync(5, [], counter));
    const second = watch(commit.sync(5, [], counter));
    const third = watch(commit.sync(5, [], counter));
    disk.finish("fd:5", Object.assign(new Error("EIO"), { code: "EIO" }));
    await settle();
    expect(first.state).toBe("rejected");
    expect((first.error as { code: string }).code).toBe("EIO");
    // The requests made during the failed fsync are still waiting for one of their own.
    expect([second.state, third.state]).toEqual(["pending", "pending"]);
    disk.finish("fd:5", new Error("EIO again"));
    await settle();
    expect([second.state, third.state]).toEqual(["rejected", "rejected"]);
    expect(counter.fsyncs).toBe(0);
  });

  it("runs fsyncs beyond its own parallelism on a widened lane, one fsync per file at a time across both", async () => {
    const pool = new HeldDisk();
    const threads = new HeldDisk();
    const commit = new GroupCommit(2, pool);
    commit.widen(threads, 2);
    // The same lane again changes nothing: doors may each ask.
    commit.widen(threads, 2);
    const all = [30, 31, 32, 33, 34].map((fd) => watch(commit.sync(fd, [], { fsyncs: 0 })));
    expect(pool.inFlight().sort()).toEqual(["fd:30", "fd:31"]);
    expect(threads.inFlight().sort()).toEqual(["fd:32", "fd:33"]);
    // Written while fd 32's fsync runs on a thread: the free pool slot must not take it early.
    const again = watch(commit.sync(32, [], { fsyncs: 0 }));
    pool.finish("fd:30");
    await settle();
    expect(pool.inFlight().sort()).toEqual(["fd:31", "fd:34"]);
    expect(again.state).toBe("pending");
    threads.finish("fd:32");
    await settle();
    expect(threads.inFlight().sort()).toEqual(["fd:32", "fd:33"]);
    threads.finish("fd:32");
    threads.finish("fd:33");
    pool.finish("fd:31");
    pool.finish("fd:34");
    await settle();
    expect([...all, again].map((w) => w.state)).toEqual(Array(6).fill("resolved"));
    expect(commit.pending).toBe(0);
  });

  it("gives a lane of threads only the fsyncs its started threads can take, and grows it when work waits", async () => {
    const pool = new HeldDisk();
    const threads = Object.assign(new HeldDisk(), {
      up: 0,
      grown: [] as (() => void)[],
      grow(whenUp: () => void) {
        this.grown.push(whenUp);
      },
    });
    const commit = new GroupCommit(1, pool);
    commit.widen(threads, 4);
    const a = watch(commit.sync(40, [], { fsyncs: 0 }));
    const b = watch(commit.sync(41, [], { fsyncs: 0 }));
    // No thread is up: fd 41 waits in line rather than for a thread to start, and one is asked for.
    expect(pool.inFlight()).toEqual(["fd:40"]);
    expect(threads.inFlight()).toEqual([]);
    expect(threads.grown.length).toBeGreaterThan(0);
    threads.up = 1;
    threads.grown[0]!();
    expect(threads.inFlight()).toEqual(["fd:41"]);
    pool.finish("fd:40");
    threads.finish("fd:41");
    await settle();
    expect([a.state, b.state]).toEqual(["resolved", "resolved"]);
  });

  it("fsyncs a lone file request at once on this thread, and queues one made while another waits", async () => {
    const disk = Object.assign(new HeldDisk(), {
      inline: [] as number[],
      fileSync(fd: number) {
        this.inline.push(fd);
      },
    });
    const commit = new GroupCommit(1, disk);
    const counter = { fsyncs: 0 };
    const alone = watch(commit.sync(50, [], counter));
    // Done before sync returned: nothing went through the pool.
    expect(disk.inline).toEqual([50]);
    expect(counter.fsyncs).toBe(1);
    await settle();
    expect(alone.state).toBe("resolved");
    // A request with a directory goes through the pool; one made while it waits queues behind it.
    const withDir = watch(commit.sync(51, ["/d"], { fsyncs: 0 }));
    const behind = watch(commit.sync(52, [], { fsyncs: 0 }));
    expect(disk.inline).toEqual([50]);
    expect(disk.inFlight()).toEqual(["fd:51"]);
    disk.finish("fd:51");
    await settle();
    disk.finish("dir:/d");
    await settle();
    disk.finish("fd:52");
    await settle();
    expect([withDir.state, behind.state]).toEqual(["resolved", "resolved"]);
    // A process hosting many sessions never fsyncs on its own thread.
    commit.inlineAlone = false;
    const hosted = watch(commit.sync(53, [], { fsyncs: 0 }));
    expect(disk.inline).toEqual([50]);
    disk.finish("fd:53");
    await settle();
    expect(hosted.state).toBe("resolved");
  });

  it("rejects a lone request whose inline fsync fails", async () => {
    const disk = Object.assign(new HeldDisk(), {
      fileSync() {
        throw Object.assign(new Error("EIO"), { code: "EIO" });
      },
    });
    const commit = new GroupCommit(1, disk);
    const counter = { fsyncs: 0 };
    await expect(commit.sync(60, [], counter)).rejects.toMatchObject({ code: "EIO" });
    expect(counter.fsyncs).toBe(0);
  });

  it("refuses a parallelism that is not a positive integer", () => {
    expect(() => new GroupCommit(1).widen(new HeldDisk(), 0)).toThrow(TypeError);
    expect(() => new GroupCommit(0)).toThrow(TypeError);
    expect(() => new GroupCommit(1.5)).toThrow(TypeError);
  });
});
