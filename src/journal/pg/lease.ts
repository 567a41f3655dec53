import type { Pool } from "pg";

/** Who held a session's lease before, as the new owner journals it (`lease.acquired`). */
export interface LeaseHolder {
  owner: string;
  epoch: number;
}

/**
 * A worker's ownership of one session across machines. Expiry is decided by the database clock
 * only (`now()`), so workers' clocks never matter. The holder renews it while it works; a takeover
 * happens only after expiry and raises the epoch by one, and every append of a writer opened with
 * the lease is fenced by that epoch (see store.ts), so a worker that was paused or cut off past its
 * expiry can never append again, even before it notices.
 */
export interface Lease {
  readonly session: string;
  readonly owner: string;
  readonly epoch: number;
  /** The lease this one replaced (expired or released), or null for a session's first lease. */
  readonly previous: LeaseHolder | null;
  readonly leaseMs: number;
  /**
   * Extend the expiry to now() + leaseMs. False (and `lost` aborted) when the lease expired or was
   * taken over: an expired lease is never revived, since another worker may take it at any moment.
   */
  renew(): Promise<boolean>;
  /** Stop renewing and let the next worker take over at once (its epoch is still one higher). */
  release(): Promise<void>;
  /**
   * Aborted when this worker can no longer be sure it owns the session: a renewal found the lease
   * expired or taken, or no renewal succeeded within leaseMs (by this process's own clock, which
   * catches a process that was paused). The holder must stop its work: kill its process trees.
   */
  readonly lost: AbortSignal;
}

export interface LeaseOptions {
  /** Renew automatically every this many ms while held (default leaseMs / 3; 0 disables). */
  renewEveryMs?: number;
}

/**
 * Take the lease on `session` for `owner`, or null when someone else holds a lease that has not
 * expired (by the database clock). Concurrent callers for the same session: exactly one wins.
 */
export async function acquireLease(
  pool: Pool,
  session: string,
  owner: string,
  leaseMs: number,
  options: LeaseOptions = {},
): Promise<Lease | null> {
  assertLeaseMs(leaseMs);
  // One statement (harness_take_lease in schema.ts): lock the row, then create or take it over.
  const result = await pool.query<{
    epoch: string | null;
    previous_owner: string | null;
    previous_epoch: string | null;
  }>("SELECT * FROM harness_take_lease($1, $2, $3)", [session, owner, leaseMs]);
  const row = result.rows[0];
  if (!row || row.epoch === null) return null;
  const previous =
    row.previous_owner === null ? null : { owner: row.previous_owner, epoch: Number(row.previous_epoch) };
  return new HeldLease(pool, session, owner, Number(row.epoch), previous, leaseMs, options);
}

/** The current lease row of a session (null if it never had one), and whether it has expired. */
export async function leaseOf(
  pool: Pool,
  session: string,
): Promise<(LeaseHolder & { expired: boolean; expiresAt: Date }) | null> {
  const result = await pool.query<{ owner: string; epoch: string; expired: boolean; expires_at: Date }>(
    "SELECT owner, epoch, expires_at <= now() AS expired, expires_at FROM harness_leases WHERE session_id = $1",
    [session],
  );
  const row = result.rows[0];
  return row
    ? { owner: row.owner, epoch: Number(row.epoch), expired: row.expired, expiresAt: row.expires_at }
    : null;
}

/** Sessions whose lease has expired by the database clock: a dead worker's, for a reaper to hand on. */
export async function expiredLeases(pool: Pool): Promise<(LeaseHolder & { session: string })[]> {
  const result = await pool.query<{ session_id: string; owner: string; epoch: string }>(
    "SELECT session_id, owner, epoch FROM harness_leases WHERE expires_at <= now() ORDER BY session_id",
  );
  return result.rows.map((row) => ({ session: row.session_id, owner: row.owner, epoch: Number(row.epoch) }));
}

function assertLeaseMs(leaseMs: number): void {
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 1) {
    throw new RangeError(`a lease lasts a positive whole number of milliseconds, not ${leaseMs}`);
  }
}

class HeldLease implements Lease {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** performance.now() when the last successful renewal (or the acquisition) was sent. */
  private renewedAt: number;
  private released = false;

  constructor(
    private readonly pool: Pool,
    readonly session: string,
    readonly owner: string,
    readonly epoch: number,
    readonly previous: LeaseHolder | null,
    readonly leaseMs: number,
    options: LeaseOptions,
  ) {
    // Measured after the row was written, so this process's watchdog errs late; the fencing in the
    // database is what actually protects, the watchdog only stops a worker that cannot tell.
    this.renewedAt = performance.now();
    const every = options.renewEveryMs ?? Math.max(1, Math.floor(leaseMs / 3));
    if (every > 0) {
      this.timer = setInterval(() => void this.tick(), every);
      // Renewal alone must not keep a process alive that has nothing else to do.
      this.timer.unref();
    }
  }

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  private async tick(): Promise<void> {
    if (this.released || this.lost.aborted) return;
    if (performance.now() - this.renewedAt >= this.leaseMs) {
      this.lose(
        "no renewal succeeded within the lease time (the process was paused or the database unreachable)",
      );
      return;
    }
    await this.renew().catch((error: unknown) => {
      // A failed round trip is not yet a lost lease; the next tick or the watchdog decides.
      void error;
    });
  }

  async renew(): Promise<boolean> {
    if (this.lost.aborted) return false;
    if (this.released) return false;
    const sentAt = performance.now();
    const result = await this.pool.query(
      `UPDATE harness_leases SET expires_at = now() + $4 * interval '1 millisecond'
       WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now()`,
      [this.session, this.owner, this.epoch, this.leaseMs],
    );
    if (result.rowCount !== 1) {
      this.lose("the lease expired or was taken over by another worker");
      return false;
    }
    this.renewedAt = sentAt;
    return true;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.stopTimer();
    await this.pool.query(
      "UPDATE harness_leases SET expires_at = now() WHERE session_id = $1 AND owner = $2 AND epoch = $3",
      [this.session, this.owner, this.epoch],
    );
  }

  private lose(reason: string): void {
    this.stopTimer();
    if (!this.lost.aborted) {
      this.controller.abort(
        new Error(`lease on session ${this.session} (epoch ${this.epoch}) lost: ${reason}`),
      );
    }
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
