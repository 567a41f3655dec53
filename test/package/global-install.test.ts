import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { REPO_ROOT } from "../e2e/helpers.js";

/**
 * `harness` gets onto PATH the usual way: the packed tarball (`npm pack`), installed with
 * `npm install -g` into a fresh prefix, runs `harness demo` from anywhere. The tarball carries
 * what that needs (the compiled modules, the bundle and its code cache) and nothing test-only.
 *
 * The install is real: npm resolves and unpacks every dependency and runs their install
 * scripts, which compile better-sqlite3 from source where its prebuilt binaries cannot be
 * downloaded (about 70 s on an idle machine, minutes on a busy one). `--prefer-offline` only lets
 * npm take what its cache already holds (the tarballs `npm ci` fetched, and the package metadata
 * earlier installs fetched) without asking the registry whether it is still fresh; anything
 * missing is still fetched. It changes where bytes come from, not what gets installed.
 */

const run = promisify(execFile);

const packSchema = z.array(
  z.object({ filename: z.string(), files: z.array(z.object({ path: z.string(), mode: z.number() })) }),
);

let scratch = "";
beforeAll(() => {
  if (!existsSync(join(REPO_ROOT, "dist/bundle/main.cjs"))) {
    throw new Error("dist/bundle/main.cjs is missing: run `npm run build` (tsc and the bundle) first");
  }
  scratch = mkdtempSync(join(tmpdir(), "harness-global-install-"));
});
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("npm install -g of the packed tarball", () => {
  it("ships the bundle and the compiled modules but no tests or benchmarks, installs, and runs harness demo", {
    timeout: 1_200_000,
  }, async () => {
    // --ignore-scripts: the tree is built already; `prepare` would rebuild it.
    const packed = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", scratch], {
      cwd: REPO_ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    const [pack] = packSchema.parse(JSON.parse(packed.stdout));
    if (!pack) throw new Error("npm pack printed no package");
    const paths = pack.files.map((file) => file.path);
    for (const needed of [
      "package.json",
      "dist/src/cli/bin.js",
      "dist/src/cli/main.js",
      "dist/src/index.js",
      "dist/src/index.d.ts",
      "dist/src/engine-entry.js",
      "dist/src/engine-entry.d.ts",
      "dist/bundle/main.cjs",
      "dist/bundle/main.cjs.cache",
    ]) {
      expect(paths).toContain(needed);
    }
    // The README's links lead to docs/, so the reference ships with it.
    expect(paths).toContain("docs/cli.md");
    // Nothing else: no tests, benchmarks, scripts or sources (bench/ imports test/, so tsc emits both).
    expect(paths.filter((path) => !/^(dist\/src|dist\/bundle|docs)\//.test(path)).sort()).toEqual([
      "README.md",
      "package.json",
    ]);
    expect(pack.files.find((file) => file.path === "dist/src/cli/bin.js")?.mode).toBe(0o755);

    const prefix = join(scratch, "prefix");
    await run(
      "npm",
      [
        "install",
        "-g",
        join(scratch, pack.filename),
        "--prefix",
        prefix,
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
      ],
      { cwd: scratch, maxBuffer: 64 * 1024 * 1024 },
    );
    const bin = join(prefix, "bin", "harness");
    const target = realpathSync(bin);
    expect(target).toBe(
      realpathSync(join(prefix, "lib", "node_modules", "harness", "dist", "src", "cli", "bin.js")),
    );
    expect(readFileSync(target, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(statSync(target).mode & 0o111).toBe(0o111);

    const version = await run(bin, ["--version"], { cwd: scratch });
    const manifest = z
      .object({ version: z.string() })
      .parse(JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")));
    expect(version.stdout).toContain(manifest.version);

    // Run by its path from an unrelated directory, as a shell would from PATH.
    const workspace = join(scratch, "workspace");
    const demo = await run(bin, ["demo", "--workspace", workspace, "--json"], { cwd: scratch });
    const summary = z.object({ status: z.string(), workspace: z.string() }).parse(JSON.parse(demo.stdout));
    expect(summary).toEqual({ status: "verified", workspace: expect.any(String) });
    expect(realpathSync(summary.workspace)).toBe(realpathSync(workspace));
    expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe("hello, harness\n");

    // The native module the install compiled loads (the reservations pack's database).
    const sqlite = await run(
      process.execPath,
      [
        "-e",
        "const Database = require('better-sqlite3'); console.log(new Database(':memory:').prepare('select 6*7 as n').get().n)",
      ],
      { cwd: join(prefix, "lib", "node_modules", "harness") },
    );
    expect(sqlite.stdout.trim()).toBe("42");
  });
});
