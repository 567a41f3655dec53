import MiniSearch from "minisearch";
import type { NotOffered } from "../runtime/environment.js";
import { type SnapshotEntry, ToolRegistry, ToolSnapshot } from "../runtime/registry.js";
import { once } from "../shared/lazy-record.js";
import { TOOL_SEARCH, toolSearchTool } from "../tools/catalog/tool-search.js";
import type { CatalogMatch } from "../tools/tool.js";
import { basisTokens } from "./tokens.js";
import { toolDigests } from "./tool-surface.js";

/**
 * Deferred tools: which of the session's tools the model is offered, as a function of the tool
 * surface and the loads the journal holds (`tools.loaded`).
 *
 * When the surface is large (more than `DEFER_MAX_TOOLS` tools, or definitions over
 * `DEFER_WINDOW_SHARE` of the context window), the model is offered the always-loaded tools (the
 * built-ins, tools and servers marked `always_load`) in surface order, then `tool_search`: that is
 * the stable prefix. Tools `tool_search` loaded follow, in load order, so a load only ever appends
 * and a provider's prompt cache of the prefix (and of earlier loads) survives.
 *
 * Discovery is not permission: a tool the policy denies outright is not in the catalog, so it is
 * never found; a call of any tool is still authorized when it is made.
 */

export type DeferMode = "auto" | "always" | "never";

export const DEFER_MODES: readonly DeferMode[] = ["auto", "always", "never"];

/** How a session defers its tools (EngineOptions.deferTools). */
export interface DeferSettings {
  mode: DeferMode;
  /** Offered from the first request whatever the mode: built-ins, `always_load` tools and servers. */
  alwaysLoad(name: string): boolean;
}

/** `auto` defers above this many tools... */
export const DEFER_MAX_TOOLS = 30;
/** ...or when their definitions would take more than this share of the context window. */
export const DEFER_WINDOW_SHARE = 0.1;

/** A tool loaded by the session, with the digest of the definition loaded. */
export interface LoadedTool {
  name: string;
  digest: string;
}

/** What the model is offered for one surface and one set of loads. */
export interface Offer {
  /** The definitions sent, in order: the surface whole, or the prefix, tool_search, the loads. */
  snapshot: ToolSnapshot;
  /** Whether anything is deferred (then tool_search is offered). */
  deferred: boolean;
  /** Why a tool of the session that is not offered does not run (the runtime's `notOffered`). */
  notOffered(name: string): NotOffered | undefined;
}

/** The surface's definitions in tokens, as the request estimate counts them (JSON bytes / 4). */
export function definitionTokens(snapshot: ToolSnapshot): number {
  return basisTokens(Buffer.byteLength(JSON.stringify(snapshot.specs)));
}

/**
 * Whether `auto` defers this surface: more than DEFER_MAX_TOOLS tools in all, or the definitions
 * that could be deferred (all but the always-loaded ones, which are sent either way) over
 * DEFER_WINDOW_SHARE of the context window.
 */
export function exceedsThreshold(
  surface: ToolSnapshot,
  contextWindow: number,
  alwaysLoad: (name: string) => boolean = () => false,
): boolean {
  if (surface.entries.length > DEFER_MAX_TOOLS) return true;
  const deferrable = new ToolSnapshot(surface.entries.filter((entry) => !alwaysLoad(entry.tool.name)));
  return definitionTokens(deferrable) > contextWindow * DEFER_WINDOW_SHARE;
}

/**
 * The one tool_search entry (its definition never changes within a harness version), made the
 * first time a surface is deferred: its JSON schema is not worth making in a session that never
 * defers.
 */
const searchEntry = once(
  () => new ToolRegistry().register(toolSearchTool).snapshot().entries[0] as SnapshotEntry,
);

/**
 * The offer for the latest surface and loads, built once per change: the engine asks before every
 * request and every batch of calls.
 */
export class ToolOffer {
  #catalog: Catalog | undefined;
  #offer: { surface: ToolSnapshot; key: string; offer: Offer } | undefined;

  constructor(
    private readonly settings: DeferSettings,
    private readonly contextWindow: number,
    /** The session's policy: a tool it denies outright is not discoverable. */
    private readonly deniedOutright: (name: string) => boolean,
  ) {}

  offer(surface: ToolSnapshot, loaded: readonly LoadedTool[]): Offer {
    const key = loaded.map((entry) => `${entry.name}:${entry.digest}`).join(",");
    if (this.#offer?.surface === surface && this.#offer.key === key) return this.#offer.offer;
    const offer = this.#build(surface, loaded);
    this.#offer = { surface, key, offer };
    return offer;
  }

  /** The deferred tools this session may discover, ranked for `query`; the best `limit`. */
  search(surface: ToolSnapshot, query: string, limit: number): CatalogMatch[] {
    return this.#catalogOf(surface).search(query, limit);
  }

  /** The digest of each tool's current definition (what a load records). */
  digests(surface: ToolSnapshot): ReadonlyMap<string, string> {
    return this.#catalogOf(surface).digests;
  }

  #catalogOf(surface: ToolSnapshot): Catalog {
    if (this.#catalog?.surface !== surface) {
      const entries = surface.entries.filter(
        (entry) => !this.settings.alwaysLoad(entry.tool.name) && !this.deniedOutright(entry.tool.name),
      );
      this.#catalog = new Catalog(surface, entries);
    }
    return this.#catalog;
  }

  #defers(surface: ToolSnapshot): boolean {
    if (!surface.entries.some((entry) => !this.settings.alwaysLoad(entry.tool.name))) return false;
    // A surface that already has a tool of that name keeps it (the name is not harness's then).
    if (surface.get(TOOL_SEARCH) !== undefined) return false;
    switch (this.settings.mode) {
      case "never":
        return false;
      case "always":
        return true;
      case "auto":
        return exceedsThreshold(surface, this.contextWindow, this.settings.alwaysLoad);
    }
  }

  #build(surface: ToolSnapshot, loaded: readonly LoadedTool[]): Offer {
    if (!this.#defers(surface)) return { snapshot: surface, deferred: false, notOffered: () => undefined };
    const catalog = this.#catalogOf(surface);
    const prefix = surface.entries.filter((entry) => this.settings.alwaysLoad(entry.tool.name));
    // A load whose definition is still the surface's is offered; a stale one is not (its calls are
    // refused with the new digest until it is loaded again).
    const current = loaded.filter(
      (entry) => catalog.has(entry.name) && catalog.digests.get(entry.name) === entry.digest,
    );
    const snapshot = new ToolSnapshot([
      ...prefix,
      searchEntry(),
      ...current.map((entry) => surface.get(entry.name) as SnapshotEntry),
    ]);
    const loadedDigest = new Map(loaded.map((entry) => [entry.name, entry.digest]));
    return {
      snapshot,
      deferred: true,
      notOffered: (name) => {
        const entry = surface.get(name);
        if (entry === undefined) return undefined;
        // Denied outright: the policy refuses it as it would any call, with its rule.
        if (!catalog.has(name)) return { kind: "decide", entry };
        const digest = catalog.digests.get(name) as string;
        const was = loadedDigest.get(name);
        if (was !== undefined && was !== digest) {
          return {
            kind: "refuse",
            code: "TOOL_SCHEMA_CHANGED",
            message:
              `The definition of ${name} changed since it was loaded (new definition ${digest.slice(0, 12)}); ` +
              `the call was not run. Call ${TOOL_SEARCH} with "${name}" to load the new definition, then call it again.`,
            data: { tool: name, loaded_digest: was, digest, search: TOOL_SEARCH },
          };
        }
        return {
          kind: "refuse",
          code: "TOOL_NOT_LOADED",
          message:
            `${name} exists but its definition is not loaded; the call was not run. ` +
            `Call ${TOOL_SEARCH} (e.g. with "${name}") to load it, then call it from your next step.`,
          data: { tool: name, search: TOOL_SEARCH },
        };
      },
    };
  }
}

/** A search query cannot ask for more work than this many characters of terms. */
const MAX_QUERY_TERMS = 64;

/** The discoverable catalog of one surface and its full-text index (names, descriptions, parameter names). */
class Catalog {
  readonly digests: ReadonlyMap<string, string>;
  readonly #names: ReadonlySet<string>;
  readonly #descriptions = new Map<string, string>();
  readonly #index: MiniSearch<{ id: string; name: string; description: string; params: string }>;

  constructor(
    readonly surface: ToolSnapshot,
    entries: readonly SnapshotEntry[],
  ) {
    this.#names = new Set(entries.map((entry) => entry.tool.name));
    const all = toolDigests(surface);
    this.digests = new Map([...this.#names].map((name) => [name, all.get(name) as string]));
    this.#index = new MiniSearch({
      fields: ["name", "description", "params"],
      tokenize: words,
      processTerm: (term) => (term.length > 1 ? term.toLowerCase() : null),
      searchOptions: {
        boost: { name: 3, params: 1.5 },
        prefix: (term) => term.length >= 3,
        fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
        combineWith: "OR",
      },
    });
    this.#index.addAll(
      entries.map((entry) => {
        this.#descriptions.set(entry.tool.name, oneLine(entry.spec.description));
        return {
          id: entry.tool.name,
          name: entry.tool.name,
          description: entry.spec.description,
          params: parameterNames(entry.spec.input_schema).join(" "),
        };
      }),
    );
  }

  has(name: string): boolean {
    return this.#names.has(name);
  }

  search(query: string, limit: number): CatalogMatch[] {
    const trimmed = query.trim();
    // An exact name is that tool, first (how the model loads a tool it already knows of again).
    const exact = this.#names.has(trimmed) ? [trimmed] : [];
    const terms = words(trimmed).slice(0, MAX_QUERY_TERMS).join(" ");
    const ranked = terms === "" ? [] : this.#index.search(terms).map((hit) => String(hit.id));
    const names = [...new Set([...exact, ...ranked])].slice(0, limit);
    return names.map((name) => ({ name, description: this.#descriptions.get(name) ?? "" }));
  }
}

/** Words of a name or text: `mcp__github__create_issue` and `createIssue` split into their parts. */
function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0);
}

/** The top-level parameter names of a JSON Schema object (nested ones are the tool's detail). */
function parameterNames(schema: unknown): string[] {
  if (typeof schema !== "object" || schema === null) return [];
  const properties = (schema as { properties?: unknown }).properties;
  if (typeof properties !== "object" || properties === null) return [];
  return Object.keys(properties);
}

/** The first line of a description, at most 200 characters. */
function oneLine(description: string): string {
  const first = description.trim().split(/\r?\n/)[0] ?? "";
  return first.length > 200 ? `${first.slice(0, 199)}…` : first;
}
