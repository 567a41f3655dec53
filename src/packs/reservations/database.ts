import Database from "better-sqlite3";
import { canonicalJson, sha256Hex } from "../../shared/hash.js";
import { CATALOG, type CatalogItem } from "./catalog.js";

/**
 * The inventory store: one SQLite database with the documents, the stock and the reservation
 * ledger. Stock only ever changes inside `reserve`, one IMMEDIATE transaction, so the ledger is
 * an independent count of business effects.
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS items (
  id    TEXT PRIMARY KEY,
  title TEXT NOT NULL,
  body  TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS stock (
  item_id   TEXT PRIMARY KEY REFERENCES items(id),
  available INTEGER NOT NULL CHECK (available >= 0),
  revision  INTEGER NOT NULL CHECK (revision >= 0)
) STRICT;
CREATE TABLE IF NOT EXISTS ledger (
  id              INTEGER PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  item_id         TEXT NOT NULL REFERENCES items(id),
  quantity        INTEGER NOT NULL CHECK (quantity > 0),
  revision_after  INTEGER NOT NULL,
  receipt         TEXT NOT NULL,
  created_at      TEXT NOT NULL
) STRICT;
`;

export interface ItemRow {
  id: string;
  title: string;
  body: string;
}

export interface StockRow {
  item_id: string;
  available: number;
  revision: number;
}

export interface LedgerRow {
  id: number;
  idempotency_key: string;
  item_id: string;
  quantity: number;
  revision_after: number;
  receipt: string;
  created_at: string;
}

export interface ReserveRequest {
  item_id: string;
  quantity: number;
  expected_revision: number;
  idempotency_key: string;
}

/** Every way a reservation transaction can end; the transaction never throws for these. */
export type ReserveOutcome =
  | { kind: "reserved"; replayed: boolean; row: LedgerRow; available_after: number | undefined }
  | { kind: "insufficient"; available: number; revision: number }
  | { kind: "stale"; current_revision: number }
  | { kind: "unknown_item" }
  | { kind: "key_reused"; row: LedgerRow };

export interface OpenOptions {
  /** Clock for ledger rows; defaults to real time. */
  now?: () => Date;
}

export class ReservationDb {
  private readonly db: Database.Database;
  private readonly now: () => Date;

  private constructor(db: Database.Database, options: OpenOptions) {
    this.db = db;
    this.now = options.now ?? (() => new Date());
  }

  /** Open (and create) a database file, or ":memory:". The schema is applied idempotently. */
  static open(file: string, options: OpenOptions = {}): ReservationDb {
    const db = new Database(file);
    if (file !== ":memory:") {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = FULL");
    }
    db.pragma("foreign_keys = ON");
    db.pragma("busy_timeout = 5000");
    db.exec(SCHEMA);
    return new ReservationDb(db, options);
  }

  /** A fresh database holding exactly `items` (default: the fixed catalog) at revision 0. */
  static fixture(file: string, items: readonly CatalogItem[] = CATALOG, options: OpenOptions = {}) {
    const store = ReservationDb.open(file, options);
    store.load(items);
    return store;
  }

  /** Replace all contents with `items`. Only for building fixtures. */
  load(items: readonly CatalogItem[]): void {
    const insertItem = this.db.prepare("INSERT INTO items (id, title, body) VALUES (?, ?, ?)");
    const insertStock = this.db.prepare("INSERT INTO stock (item_id, available, revision) VALUES (?, ?, 0)");
    this.db
      .transaction(() => {
        this.db.exec("DELETE FROM ledger; DELETE FROM stock; DELETE FROM items;");
        for (const item of items) {
          insertItem.run(item.id, item.title, item.body);
          insertStock.run(item.id, item.available);
        }
      })
      .immediate();
  }

  items(): ItemRow[] {
    return this.db.prepare("SELECT id, title, body FROM items ORDER BY id").all() as ItemRow[];
  }

  item(id: string): ItemRow | undefined {
    return this.db.prepare("SELECT id, title, body FROM items WHERE id = ?").get(id) as ItemRow | undefined;
  }

  stock(itemId: string): StockRow | undefined {
    return this.db.prepare("SELECT item_id, available, revision FROM stock WHERE item_id = ?").get(itemId) as
      | StockRow
      | undefined;
  }

  /** Available units per item id. */
  stockLevels(): Record<string, number> {
    const rows = this.db.prepare("SELECT item_id, available FROM stock ORDER BY item_id").all() as StockRow[];
    return Object.fromEntries(rows.map((r) => [r.item_id, r.available]));
  }

  ledger(): LedgerRow[] {
    return this.db.prepare("SELECT * FROM ledger ORDER BY id").all() as LedgerRow[];
  }

  ledgerEntry(idempotencyKey: string): LedgerRow | undefined {
    return this.db.prepare("SELECT * FROM ledger WHERE idempotency_key = ?").get(idempotencyKey) as
      | LedgerRow
      | undefined;
  }

  /**
   * The reservation transaction (BEGIN IMMEDIATE, so the revision check and the decrement see
   * the same state): replay by key, revision check, availability check, decrement, ledger row.
   */
  reserve(request: ReserveRequest): ReserveOutcome {
    return this.db
      .transaction((): ReserveOutcome => {
        const existing = this.ledgerEntry(request.idempotency_key);
        if (existing) {
          if (!sameReservation(existing, request)) return { kind: "key_reused", row: existing };
          return { kind: "reserved", replayed: true, row: existing, available_after: undefined };
        }
        const stock = this.stock(request.item_id);
        if (!stock) return { kind: "unknown_item" };
        if (stock.revision !== request.expected_revision)
          return { kind: "stale", current_revision: stock.revision };
        if (stock.available < request.quantity)
          return { kind: "insufficient", available: stock.available, revision: stock.revision };
        const revisionAfter = stock.revision + 1;
        const availableAfter = stock.available - request.quantity;
        this.db
          .prepare("UPDATE stock SET available = ?, revision = ? WHERE item_id = ? AND revision = ?")
          .run(availableAfter, revisionAfter, request.item_id, stock.revision);
        const receipt = receiptFor(request, revisionAfter);
        const createdAt = this.now().toISOString();
        const info = this.db
          .prepare(
            "INSERT INTO ledger (idempotency_key, item_id, quantity, revision_after, receipt, created_at) VALUES (?, ?, ?, ?, ?, ?)",
          )
          .run(request.idempotency_key, request.item_id, request.quantity, revisionAfter, receipt, createdAt);
        const row: LedgerRow = {
          id: Number(info.lastInsertRowid),
          idempotency_key: request.idempotency_key,
          item_id: request.item_id,
          quantity: request.quantity,
          revision_after: revisionAfter,
          receipt,
          created_at: createdAt,
        };
        return { kind: "reserved", replayed: false, row, available_after: availableAfter };
      })
      .immediate();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/** A replay carries the same content as the recorded reservation: item, quantity, base revision. */
export function sameReservation(row: LedgerRow, request: ReserveRequest): boolean {
  return (
    row.item_id === request.item_id &&
    row.quantity === request.quantity &&
    row.revision_after === request.expected_revision + 1
  );
}

/** Deterministic receipt: a replay or a reconciliation reports the very same one. */
function receiptFor(request: ReserveRequest, revisionAfter: number): string {
  const digest = sha256Hex(
    canonicalJson({
      key: request.idempotency_key,
      item_id: request.item_id,
      quantity: request.quantity,
      revision_after: revisionAfter,
    }),
  );
  return `rcpt-${digest.slice(0, 20)}`;
}
