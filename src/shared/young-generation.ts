import { setFlagsFromString } from "node:v8";

/**
 * Keep V8's young generation at the size it starts with, for a process that hosts sessions.
 *
 * V8 doubles the young generation's semispaces (1 MiB each at start, up to 16 MiB) whenever most
 * of what a scavenge found was still alive, and never gives them back: a session's steps grow it
 * within its first few hundred, so a long session's process holds ~30 MiB more at step 500 than at
 * step 100 for no state of its own. The heap's sizes are fixed when the process starts, so
 * `--max-semi-space-size` cannot be set from here; the growth factor, though, is read each time
 * the new space grows, and a factor of 1 makes every growth a no-op. Set before the first session
 * runs (a growth already done stays). Measured in bench/memory.ts against V8's default sizing, in
 * RSS and in time per step.
 *
 * V8 accepts a code cache only under the flags it was made with (a hash of every flag's value), so
 * the CLI's code cache (cli/bundle-loader.ts) is made with this set (scripts/warm-code-cache.mjs)
 * and the CLI sets it before loading any bundle code, for every command: set halfway, every part
 * loaded before it would be compiled from source (measured: a short run about 40% slower).
 */
export function holdYoungGeneration(): void {
  setFlagsFromString("--semi-space-growth-factor=1");
}
