import { readFileSync, writeFileSync } from "node:fs";
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
 * length, so the build gives each bundle a random id (its first line) and starts the cache with
 * a stamp line naming that id. A cache for another bundle is ignored, and V8 rejects one it
 * cannot use: either way the bundle still runs, compiled from source.
 *
 * A vm.Script cannot use import() on Node 20 without an experimental flag, so the bundle is
 * built with import() turned into require() and gets user files imported through
 * `setFileImporter` (src/shared/import-file.ts) by the caller.
 */

export interface LoadedBundle {
  exports: Record<string, unknown>;
  script: Script;
  /** What a cache for this bundle must start with; undefined when the bundle has no id. */
  stamp: string | undefined;
  /** True when a cache was offered and V8 refused it; undefined when none was offered. */
  cacheRejected: boolean | undefined;
}

const ID_LINE = /^\/\/ harness-bundle-id: ([0-9a-f]{32})\n/;

/** The stamp a cache for this bundle source starts with; undefined for a bundle without an id. */
function cacheStamp(source: string): string | undefined {
  const id = ID_LINE.exec(source)?.[1];
  return id === undefined ? undefined : `harness-code-cache ${id}`;
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
  const source = readFileSync(bundlePath, "utf8");
  const stamp = cacheStamp(source);
  const cachedData = cachePath === undefined || stamp === undefined ? undefined : readCache(cachePath, stamp);
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
    stamp,
    cacheRejected: cachedData === undefined ? undefined : script.cachedDataRejected === true,
  };
}

/**
 * Write the code cache of a loaded bundle. Called after the bundle has run representative
 * commands, so the functions they compiled are in the cache too.
 */
export function writeCodeCache(bundle: LoadedBundle, cachePath: string): number {
  if (bundle.stamp === undefined)
    throw new Error("the bundle has no id line; rebuild it with scripts/bundle.mjs");
  const data = bundle.script.createCachedData();
  writeFileSync(cachePath, Buffer.concat([Buffer.from(`${bundle.stamp}\n`, "latin1"), data]));
  return data.byteLength;
}
