#!/usr/bin/env node
// Entry point. `--version` is answered without loading anything else, so it starts as fast as
// Node itself. Everything else runs from the bundle (a few chunks, loaded as commands need them)
// when it is at least as new as the compiled modules, else from the modules themselves.
import { readFileSync, statSync } from "node:fs";

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === "--version" || args[0] === "-V")) {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  process.stdout.write(`harness ${pkg.version}\n`);
} else {
  const bundle = new URL("../../bundle/main.js", import.meta.url);
  const modules = new URL("./main.js", import.meta.url);
  const fresh = (() => {
    try {
      return statSync(bundle).mtimeMs >= statSync(modules).mtimeMs;
    } catch {
      return false;
    }
  })();
  const { main } = (await import(fresh ? bundle.href : modules.href)) as typeof import("./main.js");
  const code = await main(args);
  // Everything is durable and every child is gone when main returns; exit now rather than wait
  // for idle keep-alive sockets and timers (stdout/stderr writes are synchronous on Linux).
  process.exit(code);
}
