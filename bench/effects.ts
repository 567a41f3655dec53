// Recording workspace effects (issue 18): what comparing the tree before and after a shell call
// costs on a ~50k-file tree when nothing changed, and what the first snapshot of it costs.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import type { AnyNewEvent } from "../src/journal/vocabulary.js";
import { WorkspaceEffects } from "../src/runtime/workspace-effects.js";
import { TreeSnapshot } from "../src/workspace/tree-snapshot.js";
import { benchTree } from "./grep.js";
import { type BenchRow, median, round } from "./stats.js";

const RUNS = 7;
const FALLBACK_RUNS = 3;

/** ms per call of `around` for a call that changes nothing, after the base was taken. */
async function unchangedCalls(tree: TreeSnapshot, runs: number): Promise<number[]> {
  const effects = new WorkspaceEffects(tree, new MemoryArtifactStore());
  const journaled: AnyNewEvent[] = [];
  const journal = {
    record: async (events: AnyNewEvent[]) => void journaled.push(...events),
    nextSeq: () => 0,
  };
  await effects.start([], journal);
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    const { found } = await effects.around("shell", journal, async () => undefined);
    times.push(performance.now() - start);
    if (found !== undefined) throw new Error("the tree changed while nothing ran");
  }
  if (journaled.length !== 1) throw new Error(`expected only the base record, got ${journaled.length}`);
  return times;
}

/** ms per call of `around` for a call that writes one file (removed again afterwards: the tree is shared). */
async function oneFileCalls(tree: TreeSnapshot, root: string, runs: number): Promise<number[]> {
  const effects = new WorkspaceEffects(tree, new MemoryArtifactStore());
  const journal = { record: async () => undefined, nextSeq: () => 0 };
  await effects.start([], journal);
  const probe = path.join(root, "effects-probe.txt");
  const times: number[] = [];
  try {
    for (let run = 0; run < runs; run++) {
      const start = performance.now();
      const { found } = await effects.around("shell", journal, async () =>
        writeFileSync(probe, `run ${run}\n`),
      );
      times.push(performance.now() - start);
      if (found === undefined) throw new Error("the write was not found");
    }
  } finally {
    rmSync(probe, { force: true });
    effects.close();
  }
  return times;
}

export async function benchEffects(): Promise<BenchRow[]> {
  const { root, files } = benchTree();
  // The object store and the stat cache go beside the tree, not into it: the tree is shared.
  const stateDir = mkdtempSync(path.join(tmpdir(), "harness-bench-effects-"));
  try {
    const tree = () => new TreeSnapshot({ root, stateDir });
    let began = performance.now();
    const cold = tree();
    const manifest = await cold.snapshot();
    const firstMs = performance.now() - began;
    cold.save();
    cold.close();

    began = performance.now();
    const warm = tree();
    await warm.snapshot();
    const reopenMs = performance.now() - began;

    const perCall = await unchangedCalls(warm, RUNS);
    const oneFile = await oneFileCalls(new TreeSnapshot({ root, stateDir }), root, RUNS);
    // Where change notifications are unavailable (out of inotify watches): two full walks per call.
    const fallback = await unchangedCalls(new TreeSnapshot({ root, stateDir, watch: false }), FALLBACK_RUNS);
    warm.close();
    return [
      { name: "effects.tree.files", value: files, unit: "files", note: `${manifest.size} recorded; ${root}` },
      {
        name: "effects.first_snapshot",
        value: round(firstMs, 0),
        unit: "ms",
        note: "no cache: every file hashed and copied into the object store",
      },
      {
        name: "effects.new_process_snapshot",
        value: round(reopenMs, 0),
        unit: "ms",
        note: "saved stat cache, nothing hashed",
      },
      {
        name: "effects.shell_call_unchanged",
        value: round(median(perCall), 1),
        unit: "ms",
        note: `median of ${RUNS}: tree before + after a call that changed nothing (change notifications); goal < 50`,
      },
      {
        name: "effects.shell_call_one_file_written",
        value: round(median(oneFile), 1),
        unit: "ms",
        note: `median of ${RUNS}: a call that wrote one file (read, hashed, kept)`,
      },
      {
        name: "effects.shell_call_unchanged.no_notifications",
        value: round(median(fallback), 0),
        unit: "ms",
        note: `median of ${FALLBACK_RUNS}: the same with two full stat walks (no inotify watches left)`,
      },
    ];
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}
