/*
 * The process groups this thread's sessions started (sandboxed commands, background processes,
 * services: each is spawned detached, so its pid is its group's id). Noted only when a watcher is
 * set: a session thread of `harness serve` reports them to the main thread, which kills what is
 * left of a thread's groups if the thread dies before it could stop them itself.
 */
export interface GroupWatcher {
  started(pgid: number): void;
  ended(pgid: number): void;
}

let watcher: GroupWatcher | undefined;

export function watchProcessGroups(next: GroupWatcher | undefined): void {
  watcher = next;
}

export function groupStarted(pgid: number): void {
  watcher?.started(pgid);
}

export function groupEnded(pgid: number): void {
  watcher?.ended(pgid);
}
