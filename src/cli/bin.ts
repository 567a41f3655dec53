#!/usr/bin/env node
// Entry point. `--version` is answered without loading anything else, so it starts as fast as
// Node itself. Everything else runs from the single-file bundle with its V8 code cache (see
// bundle-loader.ts) when the bundle is at least as new as the compiled modules, else from the
// modules themselves.
import { readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

type MainModule = typeof import("./main.js");

const args = process.argv.slice(2);
// HARNESS_TRACE_STARTUP=1: where a command's time goes (see src/shared/trace-startup.ts).
const trace = process.env.HARNESS_TRACE_STARTUP === "1";
const mark = (label: string) => {
  if (!trace) return;
  const rss = (process.memoryUsage.rss() / 1048576).toFixed(1);
  const { user, system } = process.cpuUsage();
  const cpu = ((user + system) / 1000).toFixed(1);
  process.stderr.write(
    `harness trace ${performance.now().toFixed(1).padStart(7)} ms ${cpu.padStart(7)} cpu ${rss.padStart(6)} MiB  ${label}\n`,
  );
};
mark("bin: started");
if (args.length === 1 && (args[0] === "--version" || args[0] === "-V" || args[0] === "-v")) {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  process.stdout.write(`harness ${pkg.version}\n`);
} else {
  // Every command keeps V8's young generation at its start size: memory stays flat over a long
  // session (bench/memory.ts measures it, and the time per step, against the default). Set for
  // every command and before any bundle code loads, as the build's warm-up sets it: V8 accepts a
  // code cache only under the flags it was made with (see young-generation.ts).
  (await import("../shared/young-generation.js")).holdYoungGeneration();
  const bundle = fileURLToPath(new URL("../../bundle/main.cjs", import.meta.url));
  const modules = new URL("./main.js", import.meta.url);
  const fresh = (() => {
    try {
      return statSync(bundle).mtimeMs >= statSync(modules).mtimeMs;
    } catch {
      return false;
    }
  })();
  let entry: MainModule;
  if (fresh) {
    const { loadBundle } = await import("./bundle-loader.js");
    entry = loadBundle(bundle, `${bundle}.cache`).exports as unknown as MainModule;
    entry.setFileImporter((url) => import(url));
    mark("bin: bundle entry loaded");
  } else {
    entry = (await import(modules.href)) as MainModule;
  }
  const code = await entry.main(args);
  mark("bin: main returned");
  // Everything is durable and every child is gone when main returns; exit now rather than wait
  // for idle keep-alive sockets and timers (stdout/stderr writes are synchronous on Linux).
  process.exit(code);
}
