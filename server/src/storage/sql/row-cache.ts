import type { SqlRow } from './driver.ts';

/**
 * What a driver must tell the row cache to keep it exact: it is the only writer of its database
 * in this process, and can say whether uncommitted writes are open and whether another process
 * committed (the embedded SQLite store). A shared server (PostgreSQL) has a ChangeFeed instead.
 */
export interface CacheableDriver {
  /** True while any write of this process is not committed yet (a transaction or a write group). */
  hasUncommittedWrites(): boolean;
  /** True when another process (or connection) committed since the last call. */
  changedElsewhere(): boolean;
}

/** What a ChangeFeed tells the cache: rows, classes, or everything changed elsewhere. */
export interface RowForgetting {
  forget(className: string, objectId: string): void;
  forgetClass(className: string): void;
  clear(): void;
}

/**
 * The committed changes of a store that other processes write too (PostgreSQL:
 * storage/postgres/row-changes.ts; docs/architecture/storage.md).
 */
export interface ChangeFeed {
  /**
   * Resolves once `cache` has forgotten every row changed by a commit made before the call;
   * undefined when no other process can have committed such a change.
   */
  catchUp(cache: RowForgetting): Promise<void> | undefined;
  /** The checks the cache makes itself, for what the looks do not cover (see CacheableDriver). */
  readonly localChecks: CacheableDriver;
  /** Called once with the cache the feed keeps exact. */
  attach(cache: RowCache): void;
  /**
   * True while no other process can commit anything (the PostgreSQL instance is sole): every
   * change then passes this process's writeBoundary.
   */
  readonly sole: boolean;
}

/**
 * Whether a class's rows are cached: built-in classes (users, sessions...) have caches of their
 * own and secrets in their rows.
 */
export const isCachedClass = (className: string): boolean => !className.startsWith('_');

/** Most counts kept; past it they start over. */
const MOST_COUNTS = 10_000;

/** Rough memory of a row as stored: its strings and bytes, plus a fixed cost per value and per row. */
function sizeOf(row: SqlRow): number {
  let bytes = 64;
  for (const key in row) {
    const value = row[key];
    bytes += 16 + key.length;
    if (typeof value === 'string') bytes += value.length;
    else if (value instanceof Uint8Array) bytes += value.byteLength;
    else bytes += 8;
  }
  return bytes;
}

/**
 * Committed rows of the embedded store as read by id, so that a read by id of a row read before
 * skips the SQL engine. Only rows as committed are kept, and every write makes the cache forget the
 * row (the store calls `forget` for each row it writes and `forgetClass` or `clear` for schema
 * changes and purges):
 * - a row is added only while no write of this process is uncommitted, so a row being changed by
 *   an open transaction or write group can never be added in its old state and kept after commit;
 * - a row is added only if nothing was forgotten since its read began (`ticket`): a write and its
 *   commit that land between the read and the `add` (other requests run at the read's `await`)
 *   make the read's copy old;
 * - a write removes the row at once, inside its transaction, so the old state is never answered
 *   after the write and before the commit to a read that must see it (reads inside a transaction
 *   never use the cache);
 * - a commit made by another process empties the cache (checked once per turn of the event loop);
 * - on a store that other processes write too, a cached row is answered only after `catchUp`: the
 *   changes committed before the read began are forgotten first (see ChangeFeed).
 *
 * The cache decides nothing about access: the store checks each cached row against the read's
 * whole condition (the ACL among it) with the same in-memory matcher realtime uses. It holds at
 * most `maxBytes` (estimated); the oldest rows go first.
 */
export class RowCache implements RowForgetting {
  private readonly rows = new Map<string, { row: SqlRow; bytes: number }>();
  /** Counts of whole classes as a caller (see count), by class and principals. */
  private readonly counts = new Map<string, number>();
  private bytes = 0;
  /** Counts forgets: a read's copy may be kept only if none happened since the read began. */
  private generation = 0;
  /** Whether another process's commits were looked for in this turn of the event loop. */
  private checkedThisTurn = false;

  /** `feed`: the changes committed by other processes, on a store they write too. */
  constructor(
    private readonly driver: CacheableDriver,
    private readonly maxBytes: number,
    private readonly feed?: ChangeFeed,
  ) {
    feed?.attach(this);
  }

  /**
   * Undefined when rows held may be answered at once; else resolves once the changes committed
   * elsewhere before the call are forgotten (a failed look empties the cache: reads go to the store).
   */
  catchUp(): Promise<void> | undefined {
    return this.feed?.catchUp(this)?.catch(() => this.clear());
  }

  private key(className: string, objectId: string): string {
    return `${className}\0${objectId}`;
  }

  private checkOtherWriters(): void {
    if (this.checkedThisTurn) return;
    this.checkedThisTurn = true;
    setImmediate(() => {
      this.checkedThisTurn = false;
    });
    if (this.driver.changedElsewhere()) this.clear();
  }

  get(className: string, objectId: string): SqlRow | undefined {
    if (this.rows.size === 0) return undefined;
    this.checkOtherWriters();
    return this.rows.get(this.key(className, objectId))?.row;
  }

  /** Taken before a read whose row may be added: the cache's state of forgets at that moment. */
  ticket(): number {
    return this.generation;
  }

  /**
   * Keeps a row read outside any transaction, unless a write of this process is still open or
   * something was forgotten since `ticket` was taken.
   */
  add(ticket: number, className: string, objectId: string, row: SqlRow): void {
    if (ticket !== this.generation || this.driver.hasUncommittedWrites()) return;
    this.checkOtherWriters();
    const key = this.key(className, objectId);
    this.remove(key);
    const bytes = sizeOf(row);
    if (bytes > this.maxBytes) return;
    this.rows.set(key, { row, bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.rows) {
      if (this.bytes <= this.maxBytes) break;
      this.rows.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  /**
   * A write of this process began or ended, on a driver that cannot say whether a read's row is
   * older than a write that overlapped it (PostgreSQL): a read that overlapped it keeps nothing.
   * Any write may change a count: the counts go.
   */
  writeBoundary(): void {
    this.generation++;
    this.counts.clear();
  }

  /**
   * The count kept under `key` (a whole class as a caller), only while the feed says no other
   * process can commit: then every change, of any class, passes writeBoundary, which drops every
   * count. Elsewhere counts are not kept (an insert elsewhere is in no change log).
   */
  count(key: string): number | undefined {
    return this.feed?.sole ? this.counts.get(key) : undefined;
  }

  /** Keeps a count taken after `ticket`, under the conditions of `add` and `count`. */
  keepCount(ticket: number, key: string, n: number): void {
    if (!this.feed?.sole || ticket !== this.generation || this.driver.hasUncommittedWrites()) return;
    if (this.counts.size >= MOST_COUNTS) this.counts.clear();
    this.counts.set(key, n);
  }

  forget(className: string, objectId: string): void {
    this.generation++;
    if (this.rows.size > 0) this.remove(this.key(className, objectId));
  }

  forgetClass(className: string): void {
    this.generation++;
    this.counts.clear();
    const prefix = `${className}\0`;
    for (const key of this.rows.keys()) if (key.startsWith(prefix)) this.remove(key);
  }

  clear(): void {
    this.generation++;
    this.counts.clear();
    this.rows.clear();
    this.bytes = 0;
  }

  private remove(key: string): void {
    const entry = this.rows.get(key);
    if (!entry) return;
    this.rows.delete(key);
    this.bytes -= entry.bytes;
  }

  /** Rows and estimated bytes held (tests, diagnostics). */
  get size(): { rows: number; bytes: number } {
    return { rows: this.rows.size, bytes: this.bytes };
  }
}
