import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CommandCheck } from "../src/engine/acceptance.js";
import { createSandbox } from "../src/sandbox/create.js";
import { Executor } from "../src/sandbox/executor.js";
import type { SandboxProfile } from "../src/sandbox/sandbox.js";
import { type BenchRow, median, round } from "./stats.js";

const RUNS = 15;

/** A small test file like the ones a model writes: node starts, runs assertions, exits 0. */
const TEST_FILE = `const assert = require("node:assert");
for (let i = 0; i < 1000; i++) assert.strictEqual(String(i).length > 0, true);
console.log("ok");
`;

/**
 * What sandboxing an acceptance command costs: the same checks run through the executor with
 * the default workspace-write bwrap profile and with no sandbox, interleaved so that machine
 * noise hits both alike; medians of RUNS each, and the ratio side by side.
 */
export async function benchAcceptance(): Promise<BenchRow[]> {
  const workspace = mkdtempSync(path.join(tmpdir(), "bench-accept-"));
  try {
    writeFileSync(path.join(workspace, "check.test.cjs"), TEST_FILE);
    const executor = new Executor();
    const check = (command: string, profile: SandboxProfile) =>
      new CommandCheck(command, {
        workspace,
        executor,
        profile: { sandbox: createSandbox({ profile }), env: {} },
      });
    const commands = { true: "true", node_test: `node check.test.cjs` };
    const rows: BenchRow[] = [];
    const signal = new AbortController().signal;
    for (const [label, command] of Object.entries(commands)) {
      const sandboxed = check(command, "workspace-write");
      const open = check(command, "none");
      // Warm up: the sandbox probe (cached per process), file caches.
      for (const warm of [sandboxed, open]) {
        const outcome = await warm.run(signal);
        if (!outcome.passed)
          throw new Error(`acceptance bench: "${command}" failed: ${outcome.output ?? ""}`);
      }
      const times = { none: [] as number[], bwrap: [] as number[] };
      for (let run = 0; run < RUNS; run++) {
        times.none.push(await timed(() => open.run(signal)));
        times.bwrap.push(await timed(() => sandboxed.run(signal)));
      }
      const none = median(times.none);
      const bwrap = median(times.bwrap);
      const note = `median of ${RUNS}`;
      rows.push(
        { name: `acceptance.${label}.unsandboxed`, value: round(none, 2), unit: "ms", note },
        { name: `acceptance.${label}.bwrap`, value: round(bwrap, 2), unit: "ms", note },
        { name: `acceptance.${label}.ratio_bwrap_vs_unsandboxed`, value: round(bwrap / none, 2), unit: "x" },
      );
    }
    return rows;
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await action();
  return performance.now() - start;
}
