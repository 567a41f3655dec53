import { createHash, randomBytes } from "node:crypto";
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import { mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { errnoCode } from "../shared/errno.js";
import { sha256Hex } from "../shared/hash.js";
import { ArtifactCorruptError, type ArtifactRef, type ArtifactSink, type ArtifactStore } from "./store.js";

const ID = /^[0-9a-f]{64}$/;

/**
 * Content-addressed artifacts in a session folder: `<dir>/<sha256>`. Written to a temporary
 * name, fsynced and renamed, so an artifact that exists is always whole.
 */
export class FileArtifactStore implements ArtifactStore {
  constructor(private readonly dir: string) {}

  /**
   * The artifact's bytes, checked against the SHA-256 that is its name: a file changed on disk
   * (by a hostile repository, say) fails with ArtifactCorruptError (ARTIFACT_CORRUPT to the model)
   * instead of passing forged bytes on.
   */
  async read(id: string): Promise<Uint8Array | undefined> {
    if (!ID.test(id)) return undefined;
    let bytes: Buffer;
    try {
      bytes = await readFile(join(this.dir, id));
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return undefined;
      throw error;
    }
    if (sha256Hex(bytes) !== id) {
      throw new ArtifactCorruptError(id);
    }
    return bytes;
  }

  async put(bytes: Uint8Array): Promise<ArtifactRef> {
    const id = sha256Hex(bytes);
    const target = join(this.dir, id);
    const existing = await stat(target).catch(() => undefined);
    if (existing?.size === bytes.byteLength) return { id, sha256: id, bytes: bytes.byteLength };
    await mkdir(this.dir, { recursive: true });
    const temp = join(this.dir, `.tmp-${randomBytes(6).toString("hex")}`);
    const fd = openSync(temp, "w", 0o600);
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    await rename(temp, target);
    return { id, sha256: id, bytes: bytes.byteLength };
  }

  async open(): Promise<ArtifactSink> {
    await mkdir(this.dir, { recursive: true });
    const temp = join(this.dir, `.tmp-${randomBytes(6).toString("hex")}`);
    const handle = await open(temp, "w", 0o600);
    const hash = createHash("sha256");
    let bytes = 0;
    let closed = false;
    const dir = this.dir;
    return {
      async write(chunk: Uint8Array) {
        hash.update(chunk);
        bytes += chunk.byteLength;
        await handle.write(chunk);
      },
      async finish() {
        closed = true;
        await handle.sync();
        await handle.close();
        const id = hash.digest("hex");
        await rename(temp, join(dir, id));
        return { id, sha256: id, bytes };
      },
      async abort() {
        if (!closed) await handle.close();
        closed = true;
        await rm(temp, { force: true });
      },
    };
  }
}

export interface ArtifactCheck {
  /** Artifacts whose bytes match their name. */
  intact: number;
  /** Ids of artifacts whose bytes no longer match their name. */
  modified: string[];
  /** Ids that `expected` names but that are not stored. */
  missing: string[];
}

/**
 * Check every stored artifact of a session folder against its SHA-256, and that each id in
 * `expected` (the artifacts its journal refers to) is present. Hashes streamed, one file at a time.
 */
export async function checkArtifacts(dir: string, expected: Iterable<string> = []): Promise<ArtifactCheck> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
    names = [];
  }
  const stored = new Set(names.filter((name) => ID.test(name)));
  const check: ArtifactCheck = { intact: 0, modified: [], missing: [] };
  for (const id of [...stored].sort()) {
    const hash = createHash("sha256");
    const handle = await open(join(dir, id), "r");
    try {
      for await (const chunk of handle.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    } finally {
      await handle.close();
    }
    if (hash.digest("hex") === id) check.intact += 1;
    else check.modified.push(id);
  }
  for (const id of new Set(expected)) if (!stored.has(id)) check.missing.push(id);
  check.missing.sort();
  return check;
}
