import { readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { Script } from "node:vm";

/**
 * Loads the CLI's single-file CommonJS bundle with a V8 code cache.
 *
 * Node 20 cannot cache compiled ES modules, and compiling harness's code and dependencies is a
 * large share of every command's start. A `vm.Script` can take V8's cached compilation output,
 * so the build writes one (scripts/bundle.mjs) after warming the bundle up.
 *
 * V8 checks a cache against its own version and flags but identifies the source only by its
 * length, so each cache starts with a stamp line naming the exact bundle file it was made from
 * (size and modification time). A cache for another bundle is ignored, and V8 rejects one it
 * cannot use: either way the bundle still runs, compiled from source.
 *
 * A vm.Script cannot use import() on Node 20 without an experimental flag, so the bundle is
 * built with import() turned into require() and gets user files imported through
 * `setFileImporter` (src/shared/import-file.ts) by the caller.
 */

export interface LoadedBundle {
  exports: Record<string, unknown>;
  script: Script;
  /** True when a cache was offered and V8 refused it; undefined when none was offered. */
  cacheRejected: boolean | undefined;
}

/** Identifies the bundle file a cache belongs to. */
function bundleStamp(bundlePath: string): string {
  const stat = statSync(bundlePath, { bigint: true });
  return `harness-code-cache ${stat.size} ${stat.mtimeNs}`;
}

function readCache(cachePath: string, stamp: string): Buffer | undefined {
  let raw: Buffer;
  try {
    raw = readFileSync(cachePath);
  } catch {
    return undefined;
  }
  const newline = raw.indexOf(0x0a);
  if (newline < 0 || raw.toString("latin1", 0, newline) !== stamp) return undefined;
  return raw.subarray(newline + 1);
}

/** Run the bundle as a CommonJS module and return its exports. */
export function loadBundle(path: string, cachePath?: string): LoadedBundle {
  const bundlePath = resolve(path);
  const cachedData = cachePath === undefined ? undefined : readCache(cachePath, bundleStamp(bundlePath));
  const source = readFileSync(bundlePath, "utf8");
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: bundlePath,
    ...(cachedData === undefined ? {} : { cachedData }),
  });
  const module = { exports: {} as Record<string, unknown> };
  const wrapper = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: unknown,
    filename: string,
    dirname: string,
  ) => void;
  wrapper.call(
    module.exports,
    module.exports,
    createRequire(bundlePath),
    module,
    bundlePath,
    dirname(bundlePath),
  );
  return {
    exports: module.exports,
    script,
    cacheRejected: cachedData === undefined ? undefined : script.cachedDataRejected === true,
  };
}

/**
 * Write the code cache of a loaded bundle. Called after the bundle has run representative
 * commands, so the functions they compiled are in the cache too.
 */
export function writeCodeCache(bundle: LoadedBundle, bundlePath: string, cachePath: string): number {
  const data = bundle.script.createCachedData();
  writeFileSync(cachePath, Buffer.concat([Buffer.from(`${bundleStamp(bundlePath)}\n`, "latin1"), data]));
  return data.byteLength;
}
