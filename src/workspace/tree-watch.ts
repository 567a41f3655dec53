import { type FSWatcher, watch } from "node:fs";

/**
 * Which paths may have changed since the tree was last looked at, from the kernel's file change
 * notifications (inotify on Linux): one watch per directory, which reports every entry of it
 * created, deleted, renamed, written or whose attributes changed. With no notification since the
 * last snapshot nothing needs to be read at all; otherwise only the named paths are.
 *
 * What it cannot see falls back to a full walk: a watch that could not be set up (the user's
 * inotify limit), a notification without a name, a watcher error. A file written only through a
 * shared memory map sends no notification; full walks (at every turn's start) still find it.
 */
export class TreeWatch {
  private readonly watchers = new Map<string, { watcher: FSWatcher; ino: number }>();
  private dirty = new Set<string>();
  private everything = true;
  /** False once a watch could not be set up: every snapshot is then a full walk. */
  active: boolean;

  constructor(enabled: boolean) {
    this.active = enabled;
  }

  /**
   * Watch the directory at `rel` ("" for the root), before it is read: a change made while it
   * is read is then reported too. A directory replaced by another (new inode) is watched anew.
   */
  watch(rel: string, abs: string, ino: number): void {
    if (!this.active) return;
    const existing = this.watchers.get(rel);
    if (existing?.ino === ino) return;
    existing?.watcher.close();
    try {
      // Not persistent: a watch never keeps the process alive.
      const watcher = watch(abs, { persistent: false }, (_event, name) => {
        if (typeof name !== "string" || name === "") this.everything = true;
        else this.dirty.add(rel === "" ? name : `${rel}/${name}`);
      });
      watcher.on("error", () => {
        this.everything = true;
      });
      this.watchers.set(rel, { watcher, ino });
    } catch {
      // Out of watches (ENOSPC), or the directory is gone: give up on watching, walk every time.
      this.close();
      this.active = false;
    }
  }

  /** Whether any directory is watched. */
  watchingAny(): boolean {
    return this.watchers.size > 0;
  }

  /** The tree was read without watches: the next snapshot must read all of it. */
  forget(): void {
    this.everything = true;
  }

  /** Whether the directory at `rel` is watched (it was a directory when last read). */
  watching(rel: string): boolean {
    return this.watchers.has(rel);
  }

  /** Stop watching `rel` and every directory below it (they are gone). */
  unwatchUnder(rel: string): void {
    const prefix = `${rel}/`;
    for (const [dir, { watcher }] of this.watchers) {
      if (dir === rel || dir.startsWith(prefix)) {
        watcher.close();
        this.watchers.delete(dir);
      }
    }
  }

  /** What changed since the last call: everything (walk it all), or these paths. */
  take(): { everything: boolean; paths: Set<string> } {
    const taken = { everything: this.everything || !this.active, paths: this.dirty };
    this.dirty = new Set();
    this.everything = false;
    return taken;
  }

  close(): void {
    for (const { watcher } of this.watchers.values()) watcher.close();
    this.watchers.clear();
    this.everything = true;
  }
}

/**
 * Let notifications already queued by the kernel reach the watchers: one full turn of the event
 * loop, which polls for I/O, after the point the caller knows the changes were made.
 */
export async function settleNotifications(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}
