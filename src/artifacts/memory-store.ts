import { sha256Hex } from "../shared/hash.js";
import type { ArtifactRef, ArtifactSink, ArtifactStore } from "./store.js";

/** In-memory artifacts, for library users without a disk session and for tests. */
export class MemoryArtifactStore implements ArtifactStore {
  private readonly items = new Map<string, Uint8Array>();

  async read(id: string): Promise<Uint8Array | undefined> {
    return this.items.get(id);
  }

  async put(bytes: Uint8Array): Promise<ArtifactRef> {
    const id = sha256Hex(bytes);
    this.items.set(id, new Uint8Array(bytes));
    return { id, sha256: id, bytes: bytes.byteLength };
  }

  async open(): Promise<ArtifactSink> {
    const chunks: Uint8Array[] = [];
    return {
      write: async (chunk) => {
        chunks.push(new Uint8Array(chunk));
      },
      finish: () => this.put(Buffer.concat(chunks)),
      abort: async () => {
        chunks.length = 0;
      },
    };
  }
}
