import { expect } from "vitest";
import type { ArtifactRef, ArtifactSink, ArtifactStore } from "../../src/artifacts/store.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { createToolContext } from "../../src/tools/context.js";
import { ToolError } from "../../src/tools/errors.js";
import type { ToolContext, ToolDefinition, ToolOutput } from "../../src/tools/tool.js";
import type { WorkspaceFs } from "../../src/workspace/fs.js";

/** Content-addressed artifacts held in memory. */
export class MemoryArtifactStore implements ArtifactStore {
  readonly #items = new Map<string, Uint8Array>();

  async read(id: string): Promise<Uint8Array | undefined> {
    return this.#items.get(id)?.slice();
  }

  async put(bytes: Uint8Array): Promise<ArtifactRef> {
    const id = sha256Hex(bytes);
    this.#items.set(id, bytes.slice());
    return { id, sha256: id, bytes: bytes.byteLength };
  }

  async open(): Promise<ArtifactSink> {
    const chunks: Uint8Array[] = [];
    return {
      write: async (chunk) => {
        chunks.push(chunk.slice());
      },
      finish: () => this.put(Buffer.concat(chunks)),
      abort: async () => {
        chunks.length = 0;
      },
    };
  }
}

/**
 * A ToolContext like the runtime's: observed versions come from earlier results' data
 * (`path` + `version`), as the runtime derives them from the journal.
 */
export class Session {
  readonly observed = new Map<string, string>();
  readonly artifacts = new MemoryArtifactStore();
  readonly controller = new AbortController();
  readonly context: ToolContext;
  #calls = 0;

  constructor(readonly fs: WorkspaceFs) {
    this.context = createToolContext({
      callId: "call-0",
      signal: this.controller.signal,
      fs,
      observedVersion: (path) => this.observed.get(path),
      artifacts: this.artifacts,
    });
  }

  /** Validate like the registry (schema, then semantic validation), execute, record observations. */
  async run<Args>(tool: ToolDefinition<Args>, raw: unknown): Promise<ToolOutput> {
    const args = tool.input.parse(raw);
    tool.validate?.(args);
    const output = await tool.execute(args, { ...this.context, callId: `call-${++this.#calls}` });
    const data = output.data;
    if (data !== undefined && typeof data.path === "string" && typeof data.version === "string") {
      this.observed.set(data.path, data.version);
    }
    return output;
  }

  /** Run a call that must fail with a ToolError of `code`. */
  async fail<Args>(tool: ToolDefinition<Args>, raw: unknown, code: string): Promise<ToolError> {
    const error = await this.run(tool, raw).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error, `expected ToolError ${code}`).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe(code);
    return error as ToolError;
  }
}
