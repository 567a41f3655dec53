import { createHmac, hash, randomBytes } from "node:crypto";
import { sha256Hex } from "../shared/hash.js";

/** Length of a journal key's secret, in bytes. */
export const JOURNAL_KEY_BYTES = 32;

const SHA256_BLOCK = 64;
const SHA256_BYTES = 32;
/** A record hash: lower-case hex SHA-256, the only message the fast signing path takes. */
const RECORD_HASH = /^[0-9a-f]{64}$/;
const RECORD_HASH_CHARS = 64;

/**
 * The secret that makes a journal this user's own: every record carries an HMAC-SHA256 of its
 * hash under this key, so a record changed (and the chain hashed again) by anyone without the key
 * no longer authenticates. The secret never leaves this object; `id` is a public fingerprint that
 * a session records so that a journal from another user or machine can say so plainly.
 */
export class JournalKey {
  readonly id: string;
  readonly #secret: Buffer;
  /** The HMAC inner and outer blocks, key XOR ipad / opad, each followed by room for its message. */
  readonly #inner: Buffer;
  readonly #outer: Buffer;

  private constructor(secret: Uint8Array) {
    this.#secret = Buffer.from(secret);
    this.#inner = Buffer.alloc(SHA256_BLOCK + RECORD_HASH_CHARS, 0x36);
    this.#outer = Buffer.alloc(SHA256_BLOCK + SHA256_BYTES, 0x5c);
    for (let i = 0; i < this.#secret.length; i++) {
      this.#inner[i]! ^= this.#secret[i]!;
      this.#outer[i]! ^= this.#secret[i]!;
    }
    // Domain-separated so the fingerprint can never equal a MAC computed with the key.
    this.id = sha256Hex(Buffer.concat([Buffer.from("harness journal key id\n"), this.#secret])).slice(0, 16);
  }

  static fromSecret(secret: Uint8Array): JournalKey {
    if (secret.byteLength !== JOURNAL_KEY_BYTES) {
      throw new RangeError(`a journal key is ${JOURNAL_KEY_BYTES} bytes, not ${secret.byteLength}`);
    }
    return new JournalKey(secret);
  }

  /** A key that lives only as long as this process (memory journals, throwaway workspaces). */
  static ephemeral(): JournalKey {
    return new JournalKey(randomBytes(JOURNAL_KEY_BYTES));
  }

  /** The authentication tag of a record with this hash (lower-case hex). */
  sign(recordHash: string): string {
    if (!RECORD_HASH.test(recordHash))
      return createHmac("sha256", this.#secret).update(recordHash).digest("hex");
    // Every record is signed on the append path, where a native Hmac object per call measured
    // about twice the cost of the same HMAC (RFC 2104) spelled out as two one-shot SHA-256
    // digests over precomputed key blocks. test/journal/key-file.test.ts checks the two agree.
    // The inner digest travels as a "binary" (latin1) string, one byte per character: asking for a Buffer
    // measured twice the cost, for the allocation of a Buffer per call.
    this.#inner.write(recordHash, SHA256_BLOCK, "latin1");
    this.#outer.write(hash("sha256", this.#inner, "binary"), SHA256_BLOCK, "latin1");
    return hash("sha256", this.#outer, "hex");
  }

  /**
   * Whether `mac` authenticates `recordHash`. A plain comparison is enough: the tag is checked
   * against a file on the user's own disk, where no one can time repeated guesses.
   */
  verifies(recordHash: string, mac: string | undefined): boolean {
    return mac !== undefined && mac === this.sign(recordHash);
  }
}
