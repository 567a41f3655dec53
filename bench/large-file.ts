import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, realpathSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BenchRow, round } from "./stats.js";

const FILE_MB = 60;

/**
 * A child process that loads read_file and the disk workspace, optionally reads the whole-file
 * first page of big.txt, and prints its own peak RSS: so the figure is read_file's alone.
 */
function childScript(read: boolean): string {
  const tool = new URL("../src/tools/files/read-file.js", import.meta.url).href;
  const disk = new URL("../src/workspace/disk-fs.js", import.meta.url).href;
  return `
    const { createReadFileTool } = await import(${JSON.stringify(tool)});
    const { DiskWorkspaceFs } = await import(${JSON.stringify(disk)});
    const fs = await DiskWorkspaceFs.create(process.argv[1]);
    let shown = 0;
    if (${read}) {
      const out = await createReadFileTool().execute({ path: "big.txt" }, { fs, signal: new AbortController().signal });
      shown = out.content.length;
    }
    process.stdout.write(JSON.stringify({ maxRssKb: process.resourceUsage().maxRSS, shown }));
  `;
}

function peakRssMb(root: string, read: boolean): number {
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", childScript(read), root], {
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`read_file child failed: ${result.stderr.slice(0, 500)}`);
  const parsed = JSON.parse(result.stdout) as { maxRssKb: number; shown: number };
  if (read && parsed.shown === 0) throw new Error("read_file returned nothing");
  return parsed.maxRssKb / 1024;
}

/** Peak RSS of a process that reads the first page of a 60 MB text file with read_file. */
export function benchLargeRead(): BenchRow[] {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-large-")));
  try {
    const line = "export const value = 'some ordinary source text, about seventy bytes';\n";
    const chunk = Buffer.from(line.repeat(Math.ceil((1024 * 1024) / line.length)));
    const fd = openSync(join(root, "big.txt"), "w");
    for (let i = 0; i < FILE_MB; i++) writeSync(fd, chunk);
    closeSync(fd);
    const baseline = peakRssMb(root, false);
    const reading = peakRssMb(root, true);
    return [
      {
        name: "peak RSS: process with read_file loaded, nothing read",
        value: round(baseline, 1),
        unit: "MB",
      },
      {
        name: `peak RSS: read_file first page of a ${FILE_MB} MB file`,
        value: round(reading, 1),
        unit: "MB",
        note: "goal: near the baseline; was ~118 MB holding the file's bytes, ~250-360 MB as a string and lines",
      },
      {
        name: "read_file's own share",
        value: round(reading - baseline, 1),
        unit: "MB",
        note: "streamed: one 1 MiB chunk and the lines shown, whatever the file's size",
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
