#!/usr/bin/env node
// Entry point. `--version` is answered without loading anything else, so it starts as fast as
// Node itself; everything else is imported lazily.
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === "--version" || args[0] === "-V")) {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  process.stdout.write(`harness ${pkg.version}\n`);
} else {
  const { main } = await import("./main.js");
  process.exitCode = await main(args);
}
