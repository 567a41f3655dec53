import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
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
const YOUNG = join(REPO_ROOT, "dist/src/shared/young-generation.js");

afterAll(removeTempDirs);

interface Loaded {
  cacheRejected: boolean | null;
  help: number;
  /** Every file the command loaded: its name and whether V8 refused its cache (null: none offered). */
  files: { name: string; rejected: boolean | null }[];
}

/** Load a bundle in a fresh Node process and report what the loader saw and the command's exit. */
function loadIn(
  bundle: string,
  cache: string,
  args: readonly string[] = ["--help"],
  env: NodeJS.ProcessEnv = childEnv(),
): Loaded {
  const script = `
    import { basename } from "node:path";
    import { loadBundle } from ${JSON.stringify(LOADER)};
    import { holdYoungGeneration } from ${JSON.stringify(YOUNG)};
    // As the CLI's bin does before loading the bundle: the cache is made under the same flags.
    holdYoungGeneration();
    const loaded = loadBundle(${JSON.stringify(bundle)}, ${JSON.stringify(cache)});
    loaded.exports.setFileImporter((url) => import(url));
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = () => true;
    process.stderr.write = () => true;
    const help = await loaded.exports.main(${JSON.stringify(args)});
    process.stdout.write = write;
    const files = loaded.files.map((file) => ({ name: basename(file.path), rejected: file.cacheRejected ?? null }));
    write(JSON.stringify({ cacheRejected: loaded.cacheRejected ?? null, help, files }));
    process.exit(0);
  `;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    env,
    encoding: "utf8",
  });
  return JSON.parse(out) as Loaded;
}

/** The parts of the built bundle that hold a package's code (the build's metafile). */
function partsHolding(pkg: string): string[] {
  return partsWith((input) => input.includes(`node_modules/${pkg}/`));
}

/** The parts of the built bundle that hold one of harness's own modules (`network/proxy.js`). */
function partsHoldingSource(module: string): string[] {
  return partsWith((input) => input === `dist/src/${module}`);
}

function partsWith(holds: (input: string) => boolean): string[] {
  const meta = JSON.parse(readFileSync(join(REPO_ROOT, "dist/bundle-meta.json"), "utf8")) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  return Object.entries(meta.outputs)
    .filter(([, output]) => Object.keys(output.inputs).some(holds))
    .map(([path]) => basename(path));
}

/** Which of `parts` a command loaded (expected: none). */
function loadedOf(loaded: Loaded, parts: string[]): string[] {
  const names = new Set(loaded.files.map((file) => file.name));
  return parts.filter((part) => names.has(part));
}

describe("the CLI bundle and its code cache", () => {
  it("the build ships a bundle with a code cache that V8 accepts", () => {
    expect(existsSync(BUNDLE), "dist/bundle/main.cjs is missing: run npm run build").toBe(true);
    const loaded = loadIn(BUNDLE, `${BUNDLE}.cache`);
    expect(loaded).toMatchObject({ cacheRejected: false, help: 0 });
    // Every part it loaded came with a cache V8 took.
    expect(loaded.files.filter((file) => file.rejected !== false)).toEqual([]);
  });

  it("a run loads only the parts it uses: no MCP client without an MCP server, no TUI, no telemetry", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const loaded = loadIn(BUNDLE, `${BUNDLE}.cache`, [
      "run",
      "--script",
      fixture("read-edit.mjs"),
      "--workspace",
      workspace,
      "--write",
      "allow",
      "edit",
    ]);
    expect(loaded.help).toBe(0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).not.toBe("status: draft\n");
    const names = new Set(loaded.files.map((file) => file.name));
    for (const pkg of [
      "@modelcontextprotocol/client",
      "ajv",
      "node-forge",
      "@mariozechner/pi-tui",
      "@opentelemetry/sdk-trace-base",
      "pg",
    ]) {
      const parts = partsHolding(pkg);
      expect(parts.length, `${pkg} is in no part of the bundle`).toBeGreaterThan(0);
      expect(
        parts.filter((part) => names.has(part)),
        `${pkg} was loaded`,
      ).toEqual([]);
    }
    // Nor the egress proxy (network policy only) or the TLS interception behind it, nor the
    // terminal approver (no terminal to ask on).
    for (const module of ["network/proxy.js", "network/intercept.js", "policy/tty-approver.js"]) {
      const parts = partsHoldingSource(module);
      expect(parts.length, `${module} is in no part of the bundle`).toBeGreaterThan(0);
      expect(loadedOf(loaded, parts), `${module} was loaded`).toEqual([]);
    }
    expect(loaded.files.filter((file) => file.rejected !== false)).toEqual([]);
  });

  it("the top-level help loads no schema library and no scripted model", () => {
    const loaded = loadIn(BUNDLE, `${BUNDLE}.cache`, ["--help"]);
    expect(loaded.help).toBe(0);
    expect(loadedOf(loaded, partsHolding("zod"))).toEqual([]);
    expect(loadedOf(loaded, partsHoldingSource("providers/scripted/script.js"))).toEqual([]);
    expect(loadedOf(loaded, partsHoldingSource("journal/vocabulary.js"))).toEqual([]);
  });

  it("HARNESS_TRACE_STARTUP=1 prints where a run's time goes on stderr; without it nothing", async () => {
    const run = async (env: NodeJS.ProcessEnv) => {
      const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
      const child = startHarness(
        ["run", "--script", fixture("read-edit.mjs"), "--workspace", workspace, "--write", "allow", "edit"],
        { env },
      );
      return finished(child);
    };
    const traced = await run({ ...childEnv(), HARNESS_TRACE_STARTUP: "1" });
    expect(traced.code).toBe(0);
    const lines = traced.stderr.split("\n").filter((line) => line.startsWith("harness trace "));
    const labels = lines.map((line) => /MiB {2}(.*)$/.exec(line)?.[1]);
    expect(labels).toEqual(
      expect.arrayContaining([
        "bin: started",
        "bin: bundle entry loaded",
        "main: command run loaded",
        "run: session prepared",
        "record 0 session.started",
        "run: engine done",
      ]),
    );
    // The built CLI runs under the flags its code cache was made with: V8 took every part's cache.
    expect(labels.filter((label) => label?.startsWith("code cache rejected"))).toEqual([]);
    const times = lines.map((line) => Number(/^harness trace +([\d.]+) ms/.exec(line)?.[1]));
    expect(times.every((time, i) => Number.isFinite(time) && (i === 0 || time >= times[i - 1]!))).toBe(true);
    // The CPU time the process used so far, which only grows.
    const cpu = lines.map((line) => Number(/ ms +([\d.]+) cpu +[\d.]+ MiB/.exec(line)?.[1]));
    expect(
      cpu.every((used, i) => Number.isFinite(used) && used > 0 && (i === 0 || used >= cpu[i - 1]!)),
    ).toBe(true);
    const quiet = await run(childEnv());
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).not.toContain("harness trace");
  });

  it("a cache made for another bundle is ignored, one V8 refuses is rejected, and the bundle runs either way", async () => {
    // The entry's parts are its siblings: every variant below sits in a copy of the whole bundle.
    const dir = await tempDir("harness-bundle-");
    cpSync(join(REPO_ROOT, "dist/bundle"), dir, { recursive: true });
    const source = readFileSync(BUNDLE, "utf8");
    const cache = readFileSync(`${BUNDLE}.cache`);
    const newline = cache.indexOf(0x0a);
    const stamp = cache.subarray(0, newline).toString("latin1");
    const id = /^\/\/ harness-bundle-id: ([0-9a-f]{32})\n/.exec(source)?.[1];
    expect(stamp).toBe(`harness-code-cache ${id}`);

    // The same bytes elsewhere are the same bundle: its cache is used.
    const copy = join(dir, "copy.cjs");
    copyFileSync(BUNDLE, copy);
    expect(loadIn(copy, `${BUNDLE}.cache`)).toMatchObject({ cacheRejected: false, help: 0 });

    // Another build (another id, same length): the cache is not offered to V8 at all.
    const other = join(dir, "other.cjs");
    writeFileSync(other, source.replace(id ?? "", "f".repeat(32)));
    expect(loadIn(other, `${BUNDLE}.cache`)).toMatchObject({ cacheRejected: null, help: 0 });

    // The right stamp with damaged V8 data (its header overwritten): V8 refuses it.
    const damaged = join(dir, "damaged.cache");
    writeFileSync(
      damaged,
      Buffer.concat([cache.subarray(0, newline + 1), Buffer.alloc(16), cache.subarray(newline + 1 + 16)]),
    );
    expect(loadIn(copy, damaged)).toMatchObject({ cacheRejected: true, help: 0 });

    // A bundle built without an id line never uses a cache.
    const anonymous = join(dir, "anonymous.cjs");
    writeFileSync(anonymous, source.replace(/^[^\n]*\n/, ""));
    expect(loadIn(anonymous, `${BUNDLE}.cache`)).toMatchObject({ cacheRejected: null, help: 0 });
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
