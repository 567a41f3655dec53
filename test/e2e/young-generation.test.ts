import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, REPO_ROOT } from "./helpers.js";

const MODULE = pathToFileURL(join(REPO_ROOT, "dist/src/shared/young-generation.js")).href;

/**
 * A fresh process allocating as a session's steps do (mostly garbage, some of it kept a while):
 * the new space's size in MiB at the end, with the CLI's start-up configuration or V8's default.
 */
function newSpaceMib(held: boolean): number {
  const script = `
    import { getHeapSpaceStatistics } from "node:v8";
    ${held ? `(await import(${JSON.stringify(MODULE)})).holdYoungGeneration();` : ""}
    const kept = [];
    for (let i = 0; i < 2_000_000; i++) {
      const o = { i, text: "step " + i, list: [i, i + 1] };
      kept.push(o);
      if (kept.length > 20_000) kept.length = 0;
    }
    const space = getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
    process.stdout.write(String(space.space_size / 2 ** 20));
  `;
  return Number(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }));
}

describe("the young generation of a process that hosts sessions", () => {
  beforeAll(() => ensureBuilt());

  it("stays at its start size, where V8's default grows it", () => {
    const held = newSpaceMib(true);
    const grown = newSpaceMib(false);
    expect(held).toBeLessThanOrEqual(2);
    expect(grown).toBeGreaterThan(held * 2);
  }, 60_000);
});
