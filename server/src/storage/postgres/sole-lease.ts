import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

/**
 * The sole-writer lease: while an instance is the only one using its PostgreSQL schema, its row
 * cache answers reads by id without looking at the change log first (row-changes.ts), as the
 * embedded store's does; as soon as another instance (or any other program writing a cached
 * class) appears, it looks again. docs/architecture/storage.md, "The row cache on PostgreSQL".
 *
 * Two advisory locks of the schema:
 * - the member lock, taken shared by every pool connection of every instance when it opens
 *   (JOIN_SQL), keyed with the instance's own number: the connections of the other instances
 *   show in `pg_locks`;
 * - the sole lock, held exclusively by the sole instance's lease connection.
 *
 * An instance becomes sole by taking the sole lock and then finding no other instance's member
 * lock and no one waiting for the sole lock; it empties its cache then. While sole it confirms
 * this every SOLE_CONFIRM_MS, and answers from its cache only within SOLE_LEASE_MS of the sending
 * of its last confirmation that found no one. When a confirmation finds someone, it stops being
 * sole first and releases the sole lock after.
 *
 * The others never commit a change to a cached row while an instance is sole:
 * - a new connection of another instance takes its member lock and then waits until the sole
 *   lock is free (`waitUntilNoneSole`), which the sole instance makes it at its next confirmation;
 *   if it is not freed within SOLE_LEASE_MS (the sole instance stalled, or its lease connection
 *   was lost), the connection goes on, since every confirmation sent after its member lock was
 *   taken finds it, so the sole instance's lease has run out by then;
 * - a session that is no instance's (psql, another program) waits in the triggers for the sole
 *   lock (NON_MEMBER_WAITS): the sole instance sees it waiting and lets it go.
 */

/** How long after sending a confirmation that found no one an instance answers as the sole one. */
export const SOLE_LEASE_MS = 1000;
/** How often the sole instance confirms it is sole. */
export const SOLE_CONFIRM_MS = 100;
/** How often an instance that is not sole tries to become sole. */
export const SOLE_TRY_MS = 1000;
/** Slack for clocks that run at slightly different rates in different processes. */
const CLOCK_SLACK_MS = 100;

/** The member lock's first key (its second is the instance's number). */
const MEMBER_KEY = "hashtext(current_schema() || ':bds-member')";
/**
 * The sole lock's first key (its second is 0); `schema`: the SQL of the schema's name (the
 * triggers give their table's).
 */
const soleKey = (schema: string): string => `hashtext(${schema} || ':bds-sole')`;
/** The sole lock of the instance's own schema, as the arguments of the advisory lock functions. */
const SOLE = `${soleKey('current_schema()')}, 0`;

/**
 * In a trigger: a session that is no instance's waits until no instance is sole. The triggers of
 * the change log (row-changes.ts) and of the row counts (functions.ts) run it: every change a
 * sole instance's cache could hold (rows, counts) passes one of them.
 */
export const NON_MEMBER_WAITS =
  "IF current_setting('bds.member', true) IS DISTINCT FROM 'on' THEN " +
  `PERFORM pg_advisory_xact_lock_shared(${soleKey('TG_TABLE_SCHEMA')}, 0); END IF;`;

/** Marks a connection as an instance's (the triggers let members write without waiting). */
export const JOIN_SQL = `SELECT pg_advisory_lock_shared(${MEMBER_KEY}, $1::int4), set_config('bds.member', 'on', false)`;
/** True when no instance is sole now. */
const NONE_SOLE_SQL =
  `SELECT CASE WHEN pg_try_advisory_lock_shared(${SOLE}) ` +
  `THEN pg_advisory_unlock_shared(${SOLE}) ELSE false END AS free`;
const TAKE_SQL = `SELECT pg_try_advisory_lock(${SOLE}) AS got`;
const RELEASE_SQL = `SELECT pg_advisory_unlock(${SOLE})`;
/** Whether another instance has a connection, or anyone waits for the sole lock. */
const OTHERS_SQL =
  "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 " +
  'AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) ' +
  `AND ((classid = (${MEMBER_KEY})::oid AND objid <> $1::int4::oid) ` +
  `OR (classid = (${soleKey('current_schema()')})::oid AND objid = 0 AND pid <> pg_backend_pid()))) AS others`;

export interface SoleLeaseOptions {
  /** A new connection (not from the pool) to the schema, for the lease. */
  connect(): Promise<pg.Client>;
  /** Called when the instance becomes sole, before its first answer as such. */
  becameSole(): void;
  now?: () => number;
}

export class SoleLease {
  /** This instance's number in the member lock (its connections hold it). */
  readonly instance = randomInt(1, 2 ** 31);
  private client: pg.Client | undefined;
  /** Whether the lease connection holds the sole lock. */
  private holding = false;
  /** When the last confirmation that found no one was sent; -Infinity before the first. */
  private confirmedAt = Number.NEGATIVE_INFINITY;
  private lastTry = Number.NEGATIVE_INFINITY;
  private running = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(private readonly options: SoleLeaseOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  /** True while this instance may answer as the only one using the schema. */
  sole(): boolean {
    return this.holding && this.now() - this.confirmedAt < SOLE_LEASE_MS;
  }

  /**
   * True while this instance holds the sole lock, confirmed or not: its own writes must then be
   * accounted for by its cache as on the embedded store.
   */
  holds(): boolean {
    return this.holding;
  }

  /** Starts trying to become sole (idempotent). */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.tick()
        .catch(() => this.lost())
        .finally(() => this.schedule(SOLE_CONFIRM_MS));
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (!this.holding) {
      if (this.now() - this.lastTry < SOLE_TRY_MS) return;
      this.lastTry = this.now();
      if (!this.client) {
        const client = await this.connected();
        // Closed meanwhile: this connection would keep the process alive.
        if (this.stopped) {
          await client.end().catch(() => undefined);
          return;
        }
        this.client = client;
      }
      const got = (await this.client.query<{ got: boolean }>(TAKE_SQL)).rows[0]!.got;
      if (!got || this.stopped) return;
      this.holding = true;
    }
    const sent = this.now();
    const others = (await this.client!.query<{ others: boolean }>(OTHERS_SQL, [this.instance])).rows[0]!
      .others;
    if (others || this.stopped) {
      // No longer sole before anyone may go on (the release).
      this.holding = false;
      this.confirmedAt = Number.NEGATIVE_INFINITY;
      await this.client!.query(RELEASE_SQL);
      return;
    }
    // Newly sole, or sole again after the lease ran out (another instance may have written and
    // left meanwhile, unseen by this confirmation): what the cache holds may be old.
    if (sent - this.confirmedAt >= SOLE_LEASE_MS) this.options.becameSole();
    this.confirmedAt = sent;
  }

  private async connected(): Promise<pg.Client> {
    const client = await this.options.connect();
    // A lost connection releases the lock on the server: stop answering as sole at once.
    client.on('error', () => this.lost());
    return client;
  }

  private lost(): void {
    this.holding = false;
    this.confirmedAt = Number.NEGATIVE_INFINITY;
    const client = this.client;
    this.client = undefined;
    client?.end().catch(() => undefined);
  }

  /**
   * Run on each new pool connection once it holds its member lock: waits until no other instance
   * is sole (see the top of this file).
   */
  async waitUntilNoneSole(client: pg.ClientBase): Promise<void> {
    const deadline = this.now() + SOLE_LEASE_MS + CLOCK_SLACK_MS;
    for (;;) {
      if (this.holding) return;
      const free = (await client.query<{ free: boolean }>(NONE_SOLE_SQL)).rows[0]!.free;
      if (free || this.now() >= deadline) return;
      await sleep(20);
    }
  }

  /** Stops, releasing the sole lock with the lease connection. */
  async close(): Promise<void> {
    this.stopped = true;
    this.holding = false;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
