import { createHmac, randomBytes } from "node:crypto";
import { sha256Hex } from "../shared/hash.js";

/** Length of a journal key's secret, in bytes. */
export const JOURNAL_KEY_BYTES = 32;

/**
 * The secret that makes a journal this user's own: every record carries an HMAC-SHA256 of its
 * hash under this key, so a record changed (and the chain hashed again) by anyone without the key
 * no longer authenticates. The secret never leaves this object; `id` is a public fingerprint that
 * a session records so that a journal from another user or machine can say so plainly.
 */
export class JournalKey {
  readonly id: string;
  readonly #secret: Buffer;

  private constructor(secret: Uint8Array) {
    this.#secret = Buffer.from(secret);
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
    return createHmac("sha256", this.#secret).update(recordHash).digest("hex");
  }

  /**
   * Whether `mac` authenticates `recordHash`. A plain comparison is enough: the tag is checked
   * against a file on the user's own disk, where no one can time repeated guesses.
   */
  verifies(recordHash: string, mac: string | undefined): boolean {
    return mac !== undefined && mac === this.sign(recordHash);
  }
}
