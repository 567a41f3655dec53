// Builds the CLI bundle that src/cli/bin.ts runs: CommonJS files in dist/bundle, the entry
// main.cjs and one file per lazily imported part, each with its V8 code cache NAME.cjs.cache (see
// src/cli/bundle-loader.ts). Run by `npm run bundle` after `tsc`. The output directory is emptied
// first so nothing stale ships. It also marks the compiled bin executable (tsc writes it 0644), so
// `./dist/src/cli/bin.js` and `npm link` run it.
//
// Why split: one file holding everything (about 8 MB) cost every command the reading, code-cache
// deserialising and heap of all of it. esbuild splits only ES module output, so the bundle is
// built as split ES modules (every `import()` in the sources starts a part; code two parts share
// goes into a shared part) and each file is then turned into CommonJS, whose `require("./X.cjs")`
// the loader serves from its own files and caches.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { build, transform } from "esbuild";

const OUT_DIR = "dist/bundle";
const BIN = "dist/src/cli/bin.js";
const BUNDLE = `${OUT_DIR}/main.cjs`;

/**
 * Zod re-exports every message locale (about 360 KB) as `z.locales`; harness only uses the
 * default English messages, which zod configures itself. Serving the locale index as
 * English-only keeps the rest out of every process start.
 */
const englishOnlyZodLocales = {
  name: "english-only-zod-locales",
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";\n',
      resolveDir: dirname(args.path),
      loader: "js",
    }));
  },
};

/**
 * Zod's `fromJSONSchema` (JSON Schema to zod, about 25 KB) is used by nothing harness bundles;
 * it sits in the part every run loads, so it is replaced by a stub that says so.
 */
const noZodFromJsonSchema = {
  name: "no-zod-from-json-schema",
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]classic[\\/]from-json-schema\.js$/ }, () => ({
      contents:
        'export function fromJSONSchema() { throw new Error("z.fromJSONSchema is not part of the harness bundle"); }\n',
      loader: "js",
    }));
  },
};

await rm(OUT_DIR, { recursive: true, force: true });
const built = await build({
  entryPoints: { main: "dist/src/cli/main.js" },
  bundle: true,
  platform: "node",
  format: "esm",
  splitting: true,
  target: "node20",
  outdir: OUT_DIR,
  outExtension: { ".js": ".cjs" },
  // Flat: every part is a sibling of main.cjs, which the loader relies on.
  chunkNames: "[name]-[hash]",
  write: false,
  // Which sources each file holds, for finding what a command loads (not shipped).
  metafile: true,
  // web-tree-sitter finds its .wasm next to itself; it is loaded only when a shell call is decided.
  // So does the batch tool's interpreter (QuickJS in WebAssembly), loaded when a program first runs.
  external: ["better-sqlite3", "@lydell/node-pty", "web-tree-sitter", "quickjs-emscripten-core", "@jitl/quickjs-wasmfile-release-sync"],
  logLevel: "warning",
  plugins: [englishOnlyZodLocales, noZodFromJsonSchema],
  // `import.meta.url` (used to find package.json) becomes the running file's URL; every part is
  // in the same directory as main.cjs.
  define: { "import.meta.url": "__harnessModuleUrl" },
});
// The first line of every file is the bundle's id, which each code cache must name
// (src/cli/bundle-loader.ts). The sources are ES modules and assume strict mode, which the
// directive must open the file to give.
const banner = `// harness-bundle-id: ${randomBytes(16).toString("hex")}\n"use strict";\nvar __harnessModuleUrl = require("node:url").pathToFileURL(__filename).href;\n`;
await mkdir(OUT_DIR, { recursive: true });
await writeFile("dist/bundle-meta.json", JSON.stringify(built.metafile));
for (const file of built.outputFiles) {
  const cjs = await transform(file.text, {
    format: "cjs",
    platform: "node",
    target: "node20",
    // A vm.Script has no import() on Node 20: lazy imports of bundled code and built-ins become
    // require(); user files are imported through setFileImporter (see src/cli/bin.ts).
    supported: { "dynamic-import": false },
    logLevel: "warning",
  });
  await writeFile(file.path, `${banner}${cjs.code}`);
}

// The warm-up's own output (the demo's progress) is shown only when it fails.
const warm = spawnSync(process.execPath, ["scripts/warm-code-cache.mjs", BUNDLE, `${BUNDLE}.cache`], {
  stdio: ["ignore", "pipe", "pipe"],
  encoding: "utf8",
});
if (warm.status !== 0) {
  process.stderr.write(`${warm.stdout}${warm.stderr}`);
  process.stderr.write(`bundle: warming the code cache failed (exit ${warm.status ?? warm.signal})\n`);
  process.exit(1);
}

// The bin starts with `#!/usr/bin/env node`; rwxr-xr-x lets a shell run it by path.
await chmod(BIN, 0o755);
