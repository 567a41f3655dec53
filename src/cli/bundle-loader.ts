import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { Script } from "node:vm";
import { traceMark } from "../shared/trace-startup.js";

/**
 * Loads the CLI's CommonJS bundle with a V8 code cache per file.
 *
 * Node 20 cannot cache compiled ES modules, and compiling harness's code and dependencies is a
 * large share of every command's start. A `vm.Script` can take V8's cached compilation output,
 * so the build writes one per file (scripts/bundle.mjs) after warming the bundle up.
 *
 * The bundle is split (scripts/bundle.mjs): `main.cjs` holds what every command needs, and each
 * lazily imported part (a command, a provider's SDK, the MCP client, the TUI...) is a file next to
 * it that a `require("./NAME.cjs")` in the bundle loads here on first use, from source and its
 * own cache `NAME.cjs.cache`. A command reads, compiles and runs only the files it reaches.
 *
 * V8 checks a cache against its own version and flags but identifies the source only by its
 * length, so the build gives each bundle a random id (the first line of every file) and starts
 * each cache with a stamp line naming that id. A cache for another bundle is ignored, and V8
 * rejects one it cannot use: either way the file still runs, compiled from source.
 *
 * A vm.Script cannot use import() on Node 20 without an experimental flag, so the bundle is
 * built with import() turned into require() and gets user files imported through
 * `setFileImporter` (src/shared/import-file.ts) by the caller.
 */

export interface LoadedFile {
  path: string;
  script: Script;
  /** What a cache for this file's source must start with; undefined when it has no id. */
  stamp: string | undefined;
  /** True when a cache was offered and V8 refused it; undefined when none was offered. */
  cacheRejected: boolean | undefined;
}

export interface LoadedBundle extends LoadedFile {
  exports: Record<string, unknown>;
  /** Every file of the bundle run so far in this process, the entry first (it grows as parts load). */
  files: LoadedFile[];
  /** Load a part by its file name (`./NAME.cjs`) as the bundle would; the build's warm-up uses it. */
  requirePart(id: string): unknown;
}

const ID_LINE = /^\/\/ harness-bundle-id: ([0-9a-f]{32})\n/;
/** How the bundle names one of its own parts: always a sibling file (scripts/bundle.mjs). */
const PART = /^\.\/[A-Za-z0-9_.-]+\.cjs$/;

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

type Wrapper = (
  exports: unknown,
  require: NodeJS.Require,
  module: unknown,
  filename: string,
  dirname: string,
) => void;

/** The files of one bundle loaded in this process, by absolute path, sharing one module table. */
class BundleFiles {
  readonly files: LoadedFile[] = [];
  private readonly modules = new Map<string, { exports: Record<string, unknown> }>();

  constructor(private readonly caching: boolean) {}

  /** Run one file as a CommonJS module (once) and return its exports. */
  load(path: string, cachePath: string | undefined): { exports: Record<string, unknown>; file: LoadedFile } {
    const source = readFileSync(path, "utf8");
    const stamp = cacheStamp(source);
    const cachedData =
      cachePath === undefined || stamp === undefined ? undefined : readCache(cachePath, stamp);
    const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
      filename: path,
      ...(cachedData === undefined ? {} : { cachedData }),
    });
    const file: LoadedFile = {
      path,
      script,
      stamp,
      cacheRejected: cachedData === undefined ? undefined : script.cachedDataRejected === true,
    };
    this.files.push(file);
    // V8 refuses a cache made under other flags or another V8: the part still runs, compiled from
    // source, which only the trace shows.
    if (file.cacheRejected === true) traceMark(`code cache rejected: ${path}`);
    // Registered before it runs, as Node does, so parts that require each other see one instance.
    const module = { exports: {} as Record<string, unknown> };
    this.modules.set(path, module);
    const wrapper = script.runInThisContext() as Wrapper;
    wrapper.call(module.exports, module.exports, this.requireFor(path), module, path, dirname(path));
    return { exports: module.exports, file };
  }

  /**
   * `require` inside a file: the bundle's own parts load here, everything else through Node. Every
   * file of a bundle is in one directory, so they share one Node `require`, made on first use
   * (making one per file was a measurable share of a run's start).
   */
  requireFor(path: string): NodeJS.Require {
    const dir = dirname(path);
    const own = (id: string): unknown => {
      if (!PART.test(id)) return this.nodeRequire(path)(id);
      const part = resolve(dir, id);
      const loaded = this.modules.get(part);
      if (loaded !== undefined) return loaded.exports;
      return this.load(part, this.caching ? `${part}.cache` : undefined).exports;
    };
    // Read on use, so a file that never asks for them does not make the Node require either.
    return Object.defineProperties(own, {
      resolve: { get: () => this.nodeRequire(path).resolve },
      cache: { get: () => this.nodeRequire(path).cache },
      extensions: { get: () => this.nodeRequire(path).extensions },
      main: { get: () => this.nodeRequire(path).main },
    }) as unknown as NodeJS.Require;
  }

  #node: NodeJS.Require | undefined;

  private nodeRequire(path: string): NodeJS.Require {
    this.#node ??= createRequire(path);
    return this.#node;
  }
}

/**
 * Run the bundle's entry as a CommonJS module and return its exports. With `cachePath`, the
 * entry is compiled with that cache and each part with the `.cache` file beside it.
 */
export function loadBundle(path: string, cachePath?: string): LoadedBundle {
  const files = new BundleFiles(cachePath !== undefined);
  const entry = resolve(path);
  const { exports, file } = files.load(entry, cachePath);
  return { ...file, exports, files: files.files, requirePart: files.requireFor(entry) };
}

function writeOne(file: LoadedFile, cachePath: string): number {
  if (file.stamp === undefined)
    throw new Error(`${file.path} has no id line; rebuild the bundle with scripts/bundle.mjs`);
  const data = file.script.createCachedData();
  writeFileSync(cachePath, Buffer.concat([Buffer.from(`${file.stamp}\n`, "latin1"), data]));
  return data.byteLength;
}

/**
 * Write the code caches of a loaded bundle: the entry's to `cachePath`, each part's beside it.
 * Called after the bundle has run representative commands, so the functions they compiled are in
 * the caches too. Returns the bytes written.
 */
export function writeCodeCache(bundle: LoadedBundle, cachePath: string): number {
  let bytes = 0;
  for (const file of bundle.files)
    bytes += writeOne(file, file === bundle.files[0] ? cachePath : `${file.path}.cache`);
  return bytes;
}
