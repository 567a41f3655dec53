import type { AnyRecord } from "../journal/vocabulary.js";

/**
 * Every call id a session has used, kept as 64-bit fingerprints in one typed array (open
 * addressing, linear probing) instead of the ids' strings: a reply may not use an id again, and
 * that question is asked of every id ever used, so the set grows with the session, but by 8-22
 * bytes a call instead of ~50-70 (a string and a Set entry).
 *
 * `has` may say yes for an id never used when two ids share a fingerprint (about one chance in
 * 2^64 / size): whoever refuses on a yes confirms it against the journal first (the engine does,
 * see ModelStep). A no is always right.
 */
export class CallIdSet {
  /** Fingerprint i at [2i] (high half) and [2i + 1] (low half, bit 0 set; 0 marks an empty slot). */
  #slots = new Uint32Array(2 * 64);
  #size = 0;
  /**
   * For each `HEAD` that some id continues as `HEAD/rK…` with K > 0, the largest K: the re-runs of
   * call HEAD's program after a crash (recovery names the next one `HEAD/r(K+1)`).
   */
  readonly #reruns = new Map<string, number>();

  /** Distinct fingerprints held: the ids used. */
  get size(): number {
    return this.#size;
  }

  add(id: string): void {
    this.#noteRerun(id);
    const [high, low] = fingerprint(id);
    if (this.#find(high, low) >= 0) return;
    if ((this.#size + 1) * 4 > this.#capacity() * 3) this.#grow();
    this.#insert(high, low);
    this.#size += 1;
  }

  /** Bytes the fingerprints take (the table, empty slots included). */
  get bytes(): number {
    return this.#slots.byteLength;
  }

  /** Whether the id may have been used (see the class comment: a yes is to be confirmed). */
  has(id: string): boolean {
    const [high, low] = fingerprint(id);
    return this.#find(high, low) >= 0;
  }

  /** The largest K of ids `CALL/rK…` used so far, 0 when none: what recovery's next re-run follows. */
  latestRerun(callId: string): number {
    return this.#reruns.get(callId) ?? 0;
  }

  #capacity(): number {
    return this.#slots.length / 2;
  }

  #find(high: number, low: number): number {
    const mask = this.#capacity() - 1;
    for (let i = high & mask; ; i = (i + 1) & mask) {
      const slotLow = this.#slots[2 * i + 1];
      if (slotLow === 0) return -1;
      if (slotLow === low && this.#slots[2 * i] === high) return i;
    }
  }

  #insert(high: number, low: number): void {
    const mask = this.#capacity() - 1;
    let i = high & mask;
    while (this.#slots[2 * i + 1] !== 0) i = (i + 1) & mask;
    this.#slots[2 * i] = high;
    this.#slots[2 * i + 1] = low;
  }

  #grow(): void {
    const old = this.#slots;
    this.#slots = new Uint32Array(old.length * 2);
    for (let i = 0; i < old.length; i += 2)
      if (old[i + 1] !== 0) this.#insert(old[i] as number, old[i + 1] as number);
  }

  /** Every `/r` in the id starts a candidate re-run segment of the head before it (as recovery reads ids). */
  #noteRerun(id: string): void {
    for (let at = id.indexOf("/r"); at >= 0; at = id.indexOf("/r", at + 1)) {
      const k = Number(id.slice(at + 2).split("/")[0]);
      if (!Number.isInteger(k) || k <= 0) continue;
      const head = id.slice(0, at);
      if (k > (this.#reruns.get(head) ?? 0)) this.#reruns.set(head, k);
    }
  }
}

/** Two 32-bit lanes mixed over the id's UTF-16 units (cyrb53's mixing, both lanes kept); low's bit 0 set. */
function fingerprint(id: string): [number, number] {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < id.length; i++) {
    const unit = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ unit, 2654435761);
    h2 = Math.imul(h2 ^ unit, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  // Bit 0 of the low half is given up so a slot of zeros can mean empty: 63 bits remain.
  return [h1 >>> 0, (h2 | 1) >>> 0];
}

/**
 * The call ids these records use, by the fold's rules (SessionState's reducers): a reply's calls,
 * and a program's calls (`parent_call_id`) as they start or settle. What a fingerprint's yes is
 * confirmed against.
 */
export function callIdsIn(records: readonly AnyRecord[]): Set<string> {
  const ids = new Set<string>();
  for (const record of records) {
    if (record.type === "model.reply") for (const call of record.data.calls) ids.add(call.id);
    else if (
      (record.type === "tool.started" || record.type === "tool.result") &&
      record.data.parent_call_id !== undefined
    )
      ids.add(record.data.call_id);
  }
  return ids;
}
