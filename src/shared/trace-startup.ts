import { performance } from "node:perf_hooks";

/**
 * Wall-clock marks of where a command's time goes, for finding what a short run pays before and
 * around its work: with `HARNESS_TRACE_STARTUP=1` each mark prints one line on stderr, the time
 * since the process started, the CPU time it used so far (user and system: under load the wall time
 * says little), its resident memory and what just happened. Off (the default), a mark is one boolean
 * test: the variable is read once, when this module loads.
 */
const enabled = process.env.HARNESS_TRACE_STARTUP === "1";

export function traceEnabled(): boolean {
  return enabled;
}

export function traceMark(label: string): void {
  if (!enabled) return;
  const rss = (process.memoryUsage.rss() / 1048576).toFixed(1);
  const { user, system } = process.cpuUsage();
  const cpu = ((user + system) / 1000).toFixed(1);
  process.stderr.write(
    `harness trace ${performance.now().toFixed(1).padStart(7)} ms ${cpu.padStart(7)} cpu ${rss.padStart(6)} MiB  ${label}\n`,
  );
}
