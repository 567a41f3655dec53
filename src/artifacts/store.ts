import { CodedError } from "../shared/coded-error.js";
/**
 * The artifact store seam: content-addressed bytes a session keeps (a tool's whole output when
 * only a preview goes to the model, a process's captured streams). Below both the sandbox, which
 * streams process output into it, and the tools and runtime, which read and store through it.
 * Implementations: `FileArtifactStore` (a session folder) and `MemoryArtifactStore`.
 */

export interface ArtifactRef {
  /** Content address: the SHA-256 hex of the bytes. */
  id: string;
  sha256: string;
  bytes: number;
}

/** The session's content-addressed artifact store. */
export interface ArtifactStore {
  /** Bytes of a stored artifact, or undefined when the id is unknown. */
  read(id: string): Promise<Uint8Array | undefined>;
  /** Store bytes whole; returns their content address. Idempotent. */
  put(bytes: Uint8Array): Promise<ArtifactRef>;
  /** Stream bytes into a new artifact without holding them in memory. */
  open(): Promise<ArtifactSink>;
}

export interface ArtifactSink {
  write(chunk: Uint8Array): Promise<void>;
  /** Make the artifact durable and return its address. */
  finish(): Promise<ArtifactRef>;
  /** Drop a partial artifact. */
  abort(): Promise<void>;
}

/** A stored artifact whose bytes no longer have the SHA-256 that names it. */
export class ArtifactCorruptError extends CodedError<"ARTIFACT_CORRUPT"> {
  override readonly name = "ArtifactCorruptError";
  constructor(readonly id: string) {
    super(
      "ARTIFACT_CORRUPT",
      `artifact ${id} was modified after it was stored: its bytes no longer have that SHA-256`,
    );
  }
}
