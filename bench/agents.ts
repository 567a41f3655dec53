// Starting a writing child (issue 31): its private copy of a 10,000-file workspace, base manifest
// included, against a plain recursive copy of the same tree, and `cp` with the filter and links
// kept as they are (the other way to make the copy) and the copy's base snapshot on its own.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { cp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { copyWorkspace } from "../src/session/agents/workspace-copy.js";
import { createSession } from "../src/session/create.js";
import { TreeSnapshot } from "../src/workspace/tree-snapshot.js";
import { type BenchRow, median, round } from "./stats.js";

const FILES = 10_000;
const ROUNDS = 5;

/**
 * A workspace of FILES files: source-like text files of a few hundred bytes to a few KiB in nested
 * directories, some binary files and scripts, a `.git`-like folder of many small objects, a
 * `.harness` that is not copied, and a few links.
 */
function buildWorkspace(root: string): void {
  let made = 0;
  const file = (rel: string, bytes: Buffer | string) => {
    const target = path.join(root, rel);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, bytes);
    made += 1;
  };
  // A .git-like folder: a fifth of the files, small and many directories (objects/xx/...).
  for (let i = 0; i < FILES / 5; i++)
    file(
      `.git/objects/${(i % 256).toString(16).padStart(2, "0")}/${i.toString(16).padStart(38, "0")}`,
      Buffer.alloc(120 + (i % 400), i),
    );
  file(".git/HEAD", "ref: refs/heads/main\n");
  for (let i = 0; made < FILES; i++) {
    const dir = `packages/p${i % 40}/src/${i % 7 === 0 ? "deep/er/" : ""}m${i % 25}`;
    if (i % 50 === 0) file(`${dir}/asset${i}.bin`, Buffer.alloc(4096 + (i % 8192), i % 251));
    else {
      const lines = 10 + (i % 120);
      file(
        `${dir}/f${i}.ts`,
        `${Array.from({ length: lines }, (_, n) => `export const v${n} = ${i * n};`).join("\n")}\n`,
      );
    }
  }
  writeFileSync(path.join(root, "run.sh"), "#!/bin/sh\necho run\n");
  chmodSync(path.join(root, "run.sh"), 0o755);
  symlinkSync("packages/p0", path.join(root, "p0"));
  mkdirSync(path.join(root, ".harness", "sessions"), { recursive: true });
  writeFileSync(path.join(root, ".harness", "sessions", "journal"), "not copied\n");
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const began = performance.now();
  await run();
  return performance.now() - began;
}

export async function benchAgentCopy(): Promise<BenchRow[]> {
  const scratch = mkdtempSync(path.join(tmpdir(), "harness-bench-agents-"));
  try {
    const source = path.join(scratch, "ws");
    buildWorkspace(source);
    const ours: number[] = [];
    const plain: number[] = [];
    const filtered: number[] = [];
    const snapshot: number[] = [];
    let mechanism = "";
    let files = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating, each starting from a removed target: the page cache is as warm for all.
      const a = path.join(scratch, `a${round}`);
      ours.push(
        await timed(async () => {
          const copy = await copyWorkspace(source, a);
          mechanism = copy.mechanism;
          files = copy.files;
        }),
      );
      const b = path.join(scratch, `b${round}`);
      plain.push(await timed(() => cp(source, b, { recursive: true })));
      const c = path.join(scratch, `c${round}`);
      filtered.push(
        await timed(() =>
          cp(source, c, {
            recursive: true,
            verbatimSymlinks: true,
            filter: (from) => from !== path.join(source, ".harness"),
          }),
        ),
      );
      // The base alone, as copyWorkspace takes it: a first snapshot of a copy (every file hashed).
      const state = path.join(scratch, `state${round}`);
      snapshot.push(
        await timed(async () => {
          const tree = new TreeSnapshot({ root: c, stateDir: state, watch: false, withheld: () => true });
          await tree.snapshot({ full: true });
          tree.save();
          tree.close();
        }),
      );
      for (const dir of [a, b, c, state]) rmSync(dir, { recursive: true, force: true });
    }
    // The whole start of a writing child: an `agent` call whose child answers at once (copy, base,
    // the child's setup and first record of its copy, its journal, the scan for its changes).
    const child: number[] = [];
    writeFileSync(path.join(scratch, "config.json"), "{}");
    const env = {
      ...process.env,
      HARNESS_CONFIG: path.join(scratch, "config.json"),
      HARNESS_AGENTS_DIR: path.join(scratch, "copies"),
    };
    for (let round = 0; round < 3; round++) {
      const provider = ScriptedProvider.fromFunction((_messages, step, agent) => {
        if (agent !== "") return { text: "done" };
        return step === 0
          ? {
              text: "",
              calls: [{ id: "a1", name: "agent", arguments: { task: "nothing", label: `c${round}` } }],
            }
          : { text: "ok" };
      }, "bench-agent");
      const session = await createSession({ write: "allow" }, { workspace: source, provider, env });
      let agentMs = 0;
      await session.turn("delegate", {
        record: (record) => {
          if (record.type === "tool.result" && record.data.call_id === "a1")
            agentMs = record.data.duration_ms;
        },
      });
      child.push(agentMs);
    }
    const oursMs = median(ours);
    const plainMs = median(plain);
    return [
      { name: "files in the workspace copied", value: files, unit: "files", note: `mechanism: ${mechanism}` },
      {
        name: "copyWorkspace (copy + base manifest)",
        value: round(oursMs, 1),
        unit: "ms",
        note: `median of ${ROUNDS}`,
      },
      {
        name: "fs.cp recursive (plain copy)",
        value: round(plainMs, 1),
        unit: "ms",
        note: `median of ${ROUNDS}`,
      },
      { name: "copyWorkspace / fs.cp", value: round(oursMs / plainMs, 2), unit: "x" },
      {
        name: "a writing child's whole start (agent call, empty task)",
        value: round(median(child), 1),
        unit: "ms",
        note: "median of 3: copy, base, child setup and record, changes scan",
      },
      { name: "writing child / fs.cp", value: round(median(child) / plainMs, 2), unit: "x" },
      {
        name: "fs.cp with the .harness filter, links verbatim",
        value: round(median(filtered), 1),
        unit: "ms",
        note: "the other way to make the copy",
      },
      {
        name: "base manifest of a copy alone (TreeSnapshot)",
        value: round(median(snapshot), 1),
        unit: "ms",
        note: "every file hashed, none kept",
      },
    ];
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
