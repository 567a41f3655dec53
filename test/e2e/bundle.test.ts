import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  childEnv,
  finished,
  fixture,
  journalFile,
  ndjson,
  REPO_ROOT,
  removeTempDirs,
  sessionIds,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * The built CLI runs from dist/bundle/main.cjs with a V8 code cache (src/cli/bundle-loader.ts).
 * These tests need `npm run build` (which `npm test` runs first).
 */
const BUNDLE = join(REPO_ROOT, "dist/bundle/main.cjs");
const LOADER = join(REPO_ROOT, "dist/src/cli/bundle-loader.js");

afterAll(removeTempDirs);

/** Load a bundle in a fresh Node process and report what the loader saw and `--help`'s exit. */
function loadIn(bundle: string, cache: string): { cacheRejected: boolean | null; help: number } {
  const script = `
    import { loadBundle } from ${JSON.stringify(LOADER)};
    const loaded = loadBundle(${JSON.stringify(bundle)}, ${JSON.stringify(cache)});
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = () => true;
    const help = await loaded.exports.main(["--help"]);
    process.stdout.write = write;
    write(JSON.stringify({ cacheRejected: loaded.cacheRejected ?? null, help }));
  `;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    env: childEnv(),
    encoding: "utf8",
  });
  return JSON.parse(out) as { cacheRejected: boolean | null; help: number };
}

describe("the CLI bundle and its code cache", () => {
  it("the build ships a bundle with a code cache that V8 accepts", () => {
    expect(existsSync(BUNDLE), "dist/bundle/main.cjs is missing: run npm run build").toBe(true);
    expect(loadIn(BUNDLE, `${BUNDLE}.cache`)).toEqual({ cacheRejected: false, help: 0 });
  });

  it("a cache made for another bundle is ignored, one V8 refuses is rejected, and the bundle runs either way", async () => {
    const dir = await tempDir("harness-bundle-");
    const source = readFileSync(BUNDLE, "utf8");
    const cache = readFileSync(`${BUNDLE}.cache`);
    const newline = cache.indexOf(0x0a);
    const stamp = cache.subarray(0, newline).toString("latin1");
    const id = /^\/\/ harness-bundle-id: ([0-9a-f]{32})\n/.exec(source)?.[1];
    expect(stamp).toBe(`harness-code-cache ${id}`);

    // The same bytes elsewhere are the same bundle: its cache is used.
    const copy = join(dir, "copy.cjs");
    copyFileSync(BUNDLE, copy);
    expect(loadIn(copy, `${BUNDLE}.cache`)).toEqual({ cacheRejected: false, help: 0 });

    // Another build (another id, same length): the cache is not offered to V8 at all.
    const other = join(dir, "other.cjs");
    writeFileSync(other, source.replace(id ?? "", "f".repeat(32)));
    expect(loadIn(other, `${BUNDLE}.cache`)).toEqual({ cacheRejected: null, help: 0 });

    // The right stamp with damaged V8 data (its header overwritten): V8 refuses it.
    const damaged = join(dir, "damaged.cache");
    writeFileSync(
      damaged,
      Buffer.concat([cache.subarray(0, newline + 1), Buffer.alloc(16), cache.subarray(newline + 1 + 16)]),
    );
    expect(loadIn(copy, damaged)).toEqual({ cacheRejected: true, help: 0 });

    // A bundle built without an id line never uses a cache.
    const anonymous = join(dir, "anonymous.cjs");
    writeFileSync(anonymous, source.replace(/^[^\n]*\n/, ""));
    expect(loadIn(anonymous, `${BUNDLE}.cache`)).toEqual({ cacheRejected: null, help: 0 });
  });

  it("an in-process hook module from the config is imported by the bundled CLI and decides", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const configDir = await tempDir("harness-config-");
    await writeFile(
      join(configDir, "deny-edits.mjs"),
      `export default (ctx) => ctx.tool === "edit_file" ? { decision: "deny", reason: "edits are frozen by hook" } : { decision: "allow" };`,
    );
    await writeFile(
      join(configDir, "config.json"),
      JSON.stringify({ hooks: { before_execute: [{ kind: "admit", module: "./deny-edits.mjs" }] } }),
    );
    const child = startHarness(
      ["run", "--script", fixture("read-edit.mjs"), "--workspace", workspace, "--write", "allow", "edit"],
      { env: { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") } },
    );
    const result = await finished(child);
    expect(result.stderr).not.toContain("internal error");
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: draft\n");
    const [session] = sessionIds(workspace);
    const records = ndjson(await readFile(journalFile(workspace, session ?? ""), "utf8"));
    const edit = records.find((r) => r.type === "tool.result" && r.data.call_id === "edit-1");
    expect(JSON.stringify(edit?.data)).toContain("edits are frozen by hook");
    expect(records.some((r) => r.type === "tool.started" && r.data.call_id === "edit-1")).toBe(false);
  });
});
