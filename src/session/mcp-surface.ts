import type { ToolSurfaceSource } from "../engine/tool-surface.js";
import type { UnavailableMcpTool } from "../mcp/tool.js";
import { RegistrationError, ToolRegistry, type ToolSnapshot } from "../runtime/registry.js";
import type { AnyTool } from "../tools/tool.js";
import type { McpServers } from "./mcp-servers.js";

/**
 * The session's whole tool surface: the built-in tools, then every MCP server's current tools.
 * The engine asks at each step boundary (`refresh`); a server that announced a new tool list is
 * listed again there, never while calls run, and the new snapshot is what the model is offered
 * from the next request (the engine journals it as tools.changed).
 */
export class McpToolSurface implements ToolSurfaceSource {
  #current: ToolSnapshot;
  /** Tools listed at the last build that could not be offered. */
  #unavailable: UnavailableMcpTool[];
  /** The servers' listing count this surface was built from. */
  #generation = 0;

  constructor(
    private readonly builtins: readonly AnyTool[],
    private readonly servers: McpServers | undefined,
    /** Which MCP tools `--tools` offers (mcp/tool-selection.ts); default all. */
    private readonly selects: (tool: AnyTool) => boolean = () => true,
  ) {
    const built = this.#build();
    this.#current = built.snapshot;
    this.#unavailable = built.unavailable;
  }

  /** The surface as last built (what policy lookups by tool name see). */
  get current(): ToolSnapshot {
    return this.#current;
  }

  /** Tools listed at the last build that could not be offered, with why. */
  unavailable(): readonly UnavailableMcpTool[] {
    return this.#unavailable;
  }

  async refresh(current: ToolSnapshot, signal: AbortSignal): Promise<ToolSnapshot | undefined> {
    if (this.servers === undefined || signal.aborted) return undefined;
    await this.servers.refresh(signal);
    // Servers shared with a sub-agent may have been listed again by its surface: what counts is
    // whether any listing changed since this surface was built, not who took it.
    if (this.servers.generation === this.#generation) return undefined;
    const built = this.#build();
    this.#unavailable = built.unavailable;
    if (built.snapshot.digest === current.digest) return undefined;
    this.#current = built.snapshot;
    return built.snapshot;
  }

  #build(): { snapshot: ToolSnapshot; unavailable: UnavailableMcpTool[] } {
    this.#generation = this.servers?.generation ?? 0;
    const registry = new ToolRegistry();
    for (const tool of this.builtins) registry.register(tool);
    if (this.servers === undefined) return { snapshot: registry.snapshot(), unavailable: [] };
    const { entries, unavailable } = this.servers.tools();
    for (const entry of entries) {
      if (!this.selects(entry.tool)) continue;
      // A schema the registry refuses makes that one tool unavailable, never the run fail.
      try {
        registry.register(entry.tool);
      } catch (error) {
        if (!(error instanceof RegistrationError)) throw error;
        unavailable.push({ server: entry.server, tool: entry.rawName, reason: error.message });
      }
    }
    return { snapshot: registry.snapshot(), unavailable };
  }
}
