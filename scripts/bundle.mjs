// Bundles the compiled CLI into code-split ESM chunks under dist/bundle (see src/cli/bin.ts).
// Run by `npm run bundle` after `tsc`; the output directory is emptied first so stale chunks
// from earlier builds never ship.
import { rm } from "node:fs/promises";
import { dirname } from "node:path";
import { build } from "esbuild";

const OUT_DIR = "dist/bundle";

/**
 * Zod re-exports every message locale (about 360 KB of the bundle) as `z.locales`; harness only
 * uses the default English messages, which zod configures itself. Serving the locale index as
 * English-only keeps the rest of that text out of every process start.
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

await rm(OUT_DIR, { recursive: true, force: true });
await build({
  entryPoints: ["dist/src/cli/main.js"],
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  outdir: OUT_DIR,
  external: ["better-sqlite3"],
  logLevel: "warning",
  plugins: [englishOnlyZodLocales],
  // Bundled CommonJS dependencies call require(); ESM output has none of its own.
  banner: {
    js: "import { createRequire as __harnessRequire } from 'node:module'; const require = __harnessRequire(import.meta.url);",
  },
});
