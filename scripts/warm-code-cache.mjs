// Runs the freshly built bundle through representative commands (the offline demo, a resume of
// it, help and inspection) and writes the V8 code cache of everything they compiled.
// Usage: node scripts/warm-code-cache.mjs BUNDLE CACHE
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { loadBundle, writeCodeCache } from "../dist/src/cli/bundle-loader.js";
import { holdYoungGeneration } from "../dist/src/shared/young-generation.js";

// The flags the CLI runs with (src/cli/bin.ts), set before any bundle code compiles: V8 accepts a
// code cache only under the flags it was made with.
holdYoungGeneration();

const [bundlePath, cachePath] = process.argv.slice(2);
if (bundlePath === undefined || cachePath === undefined) {
  process.stderr.write("usage: node scripts/warm-code-cache.mjs BUNDLE CACHE\n");
  process.exit(64);
}
const scratch = await mkdtemp(join(tmpdir(), "harness-warm-"));
const workspace = join(scratch, "workspace");
await mkdir(workspace);
// The developer's own config (hooks, rules, sandbox settings) must not change what the
// warm-up runs, or make the build fail.
const config = join(scratch, "config.json");
await writeFile(config, "{}\n");
process.env.HARNESS_CONFIG = config;
// Nor may it create or read the developer's journal key.
process.env.HARNESS_KEY_FILE = join(scratch, "journal.key");
const bundle = loadBundle(bundlePath);
bundle.exports.setFileImporter((url) => import(url));
const main = bundle.exports.main;
try {
  const commands = [
    ["demo", "--workspace", workspace, "--json"],
    ["demo", "--workspace", workspace],
    ["sessions", "--workspace", workspace],
    ["--help"],
    ["run", "--help"],
  ];
  for (const command of commands) {
    const code = await main(command);
    if (code !== 0) throw new Error(`harness ${command.join(" ")} exited ${code}`);
  }
  const entry = basename(bundlePath);
  for (const name of await readdir(dirname(bundlePath))) {
    if (name.endsWith(".cjs") && name !== entry) bundle.requirePart(`./${name}`);
  }
  writeCodeCache(bundle, cachePath);
} finally {
  await rm(scratch, { recursive: true, force: true });
}
