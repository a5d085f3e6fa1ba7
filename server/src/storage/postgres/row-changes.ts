import type { SqlDriver } from '../sql/driver.ts';
import { sqlIdentifier } from '../sql/names.ts';
import {
  type CacheableDriver,
  type ChangeFeed,
  isCachedClass,
  type RowCache,
  type RowForgetting,
} from '../sql/row-cache.ts';
import { NON_MEMBER_WAITS, type SoleLease } from './sole-lease.ts';

/**
 * The PostgreSQL store's log of committed row changes, which keeps every instance's row cache
 * exact (storage/sql/row-cache.ts; docs/architecture/storage.md, "The row cache on PostgreSQL").
 *
 * Triggers write one entry per row updated or deleted in a class that is cached (and one per
 * class whose schema document changes), tagged with the writing transaction's id, in the writing
 * transaction: an entry is visible exactly when its change is committed. Before an instance answers
 * a read from its cache, it reads the entries committed since its previous look (`catchUp`), with
 * a statement sent after the read began; a change committed before the read began (say, one that
 * another instance has answered) is therefore always seen and its row forgotten first. The reads
 * of one turn of the event loop share one look, so under load one small statement replaces many
 * row reads.
 *
 * "Committed since the previous look" is exact without a counter that every write would contend
 * on: each look keeps its statement's snapshot (`pg_current_snapshot()`), and the next one reads
 * the entries from the transactions that snapshot did not see (those running then, or started
 * after), which `pg_visible_in_snapshot` decides. Entries older than a minute are removed by
 * every instance (`prune`); an instance whose previous look is older than what was removed
 * forgets its whole cache.
 *
 * While the instance is the only one using the schema (sole-lease.ts), it skips the look: nobody
 * else commits a change to a cached row then. A session that is no instance's waits in the
 * triggers below until no instance is sole (the sole one sees it waiting and lets it go).
 */
export const ROW_CHANGES_TABLE = '_ROW_CHANGES';
/** One row: the transaction id below which entries of ROW_CHANGES_TABLE may have been removed. */
export const ROW_CHANGES_PRUNED_TABLE = '_ROW_CHANGES_PRUNED';

/** Entries read in one look beyond which the cache is emptied rather than forgotten row by row. */
export const MOST_CHANGES_PER_LOOK = 10_000;
/** How often entries are removed, and how old (at least) the removed ones are. */
export const PRUNE_INTERVAL_MS = 60_000;

/**
 * The log's tables and trigger functions, and the trigger on the schema documents (a class
 * changed or deleted elsewhere: its rows are forgotten). Safe to run again; run after the store's
 * own tables exist (storage/sql/schema-tables.ts init), under the start lock.
 */
export function rowChangesSql(): string {
  const t = `"${ROW_CHANGES_TABLE}"`;
  return `
CREATE TABLE IF NOT EXISTS ${t} (xid xid8 NOT NULL, class text NOT NULL, "objectId" text);
CREATE INDEX IF NOT EXISTS "${ROW_CHANGES_TABLE}_xid" ON ${t} (xid);
CREATE TABLE IF NOT EXISTS "${ROW_CHANGES_PRUNED_TABLE}" (id integer PRIMARY KEY, xid xid8 NOT NULL);
INSERT INTO "${ROW_CHANGES_PRUNED_TABLE}" (id, xid) VALUES (1, '0') ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION bds_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${NON_MEMBER_WAITS}
  INSERT INTO ${t} (xid, class, "objectId") VALUES (pg_current_xact_id(), TG_ARGV[0], OLD."objectId");
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION bds_schema_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${NON_MEMBER_WAITS}
  INSERT INTO ${t} (xid, class, "objectId")
  VALUES (pg_current_xact_id(), CASE TG_OP WHEN 'DELETE' THEN OLD."className" ELSE NEW."className" END, NULL);
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER "_SCHEMA:row_changed" AFTER INSERT OR UPDATE OR DELETE ON "_SCHEMA"
FOR EACH ROW EXECUTE FUNCTION bds_schema_changed();
`;
}

/**
 * The trigger logging a class's updated and deleted rows (inserted rows are in no cache), for a
 * class whose rows are cached; undefined for the others (built-in classes are never cached).
 */
export function rowChangeTrigger(
  table: string,
  className: string,
): { name: string; ddl: string } | undefined {
  if (!isCachedClass(className)) return undefined;
  const name = sqlIdentifier(`${table}:row_changed`);
  const cls = `'${className.replace(/'/g, "''")}'`;
  const ddl =
    `CREATE OR REPLACE TRIGGER "${name.replace(/"/g, '""')}" AFTER UPDATE OR DELETE ON "${table.replace(/"/g, '""')}" ` +
    `FOR EACH ROW EXECUTE FUNCTION bds_row_changed(${cls});`;
  return { name, ddl };
}

/** The look: the statement's snapshot, the removal mark, and the entries the previous snapshot did not see. */
const LOOK_SQL =
  'SELECT pg_current_snapshot()::text AS snapshot, p.xid::text AS pruned, ' +
  `(SELECT json_agg(json_build_array(c.class, c."objectId")) FROM (SELECT class, "objectId" FROM "${ROW_CHANGES_TABLE}" ` +
  'WHERE xid >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(xid, $1::pg_snapshot) ' +
  `LIMIT ${MOST_CHANGES_PER_LOOK + 1}) AS c) AS changes ` +
  `FROM "${ROW_CHANGES_PRUNED_TABLE}" AS p WHERE p.id = 1`;

const FIRST_LOOK_SQL = 'SELECT pg_current_snapshot()::text AS snapshot';

/** The xmin of a snapshot's text (`xmin:xmax:xip,...`). */
const snapshotXmin = (snapshot: string): bigint => BigInt(snapshot.slice(0, snapshot.indexOf(':')));

/** See the top of this file. One per PostgreSQL driver; `install` and `close` bracket its life. */
export class RowChangeFeed implements ChangeFeed {
  /** The snapshot of the latest look whose changes were applied; undefined before the first. */
  private snapshot: string | undefined;
  /** Looks sent so far, and the number of the one `snapshot` comes from. */
  private sent = 0;
  private applied = 0;
  /** The look the callers of this turn of the event loop share, sent once the turn ends. */
  private gathering: Promise<void> | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  /** The oldest running transaction one prune interval ago: entries below it are removed next. */
  private pruneBelow: string | undefined;

  /** The cache this feed keeps exact (the first one to catch up). */
  private cache: RowCache | undefined;

  /**
   * `lease`: whether this instance is the only one using the schema; `openWrites`: how many of
   * its writes are not committed yet.
   */
  constructor(
    private readonly driver: SqlDriver,
    private readonly lease: SoleLease,
    private readonly openWrites: () => number,
  ) {}

  /**
   * The local checks the cache makes while this instance holds the sole lock, as on the embedded
   * store: no row is kept while a write of this instance is open, or if one began or ended during
   * its read (writeBoundary). Otherwise the looks keep it exact.
   */
  readonly localChecks: CacheableDriver = {
    hasUncommittedWrites: () => this.lease.holds() && this.openWrites() > 0,
    changedElsewhere: () => false,
  };

  /** The cache this feed keeps exact; it is emptied whenever this instance becomes sole. */
  attach(cache: RowCache): void {
    this.cache = cache;
    this.lease.start();
  }

  /** Whether this instance is sole now: reads of cached rows skip the look (diagnostics, tests). */
  get sole(): boolean {
    return this.lease.sole();
  }

  /** Looks sent so far (diagnostics, tests). */
  get looks(): number {
    return this.sent;
  }

  /** How many times this instance became sole (diagnostics, tests). */
  soleTerms = 0;

  /** This instance became sole: rows kept before may be older than its own open writes. */
  becameSole(): void {
    this.soleTerms++;
    this.cache?.clear();
  }

  /** A write of this instance began or ended (see localChecks). */
  writeBoundary(): void {
    this.cache?.writeBoundary();
  }

  /** Makes the tables, functions and the schema trigger, and starts removing old entries. */
  async install(): Promise<void> {
    await this.driver.exec(rowChangesSql());
    this.pruneTimer ??= setInterval(() => {
      this.prune().catch(() => undefined);
    }, PRUNE_INTERVAL_MS);
    this.pruneTimer.unref();
  }

  /**
   * Resolves once `cache` has forgotten every row changed by a transaction that committed before
   * this call; undefined when nothing else can have committed (this instance is sole). The callers
   * of one turn of the event loop share one look, sent when the turn ends (after every one of them
   * came); looks of different turns may overlap.
   */
  catchUp(cache: RowForgetting): Promise<void> | undefined {
    if (this.lease.sole()) return undefined;
    this.gathering ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.gathering = undefined;
      return this.look(cache);
    });
    return this.gathering;
  }

  private async look(cache: RowForgetting): Promise<void> {
    const number = ++this.sent;
    const previous = this.snapshot;
    if (previous === undefined) {
      const row = await this.driver.get(FIRST_LOOK_SQL, []);
      // Rows kept before the first look were never checked against the log.
      cache.clear();
      this.advance(number, String(row!.snapshot));
      return;
    }
    const row = await this.driver.get(LOOK_SQL, [previous]);
    if (!row) throw new Error(`${ROW_CHANGES_PRUNED_TABLE} has no row`);
    const changes = row.changes ? (JSON.parse(String(row.changes)) as Array<[string, string | null]>) : [];
    if (BigInt(String(row.pruned)) > snapshotXmin(previous) || changes.length > MOST_CHANGES_PER_LOOK) {
      // Entries this instance had not read were removed, or too many changed: forget everything.
      cache.clear();
    } else {
      for (const [className, objectId] of changes) {
        if (objectId === null) cache.forgetClass(className);
        else cache.forget(className, objectId);
      }
    }
    this.advance(number, String(row.snapshot));
  }

  /**
   * The next look starts from this one's snapshot, unless a look sent later was applied already
   * (a later snapshot sees every commit an earlier one saw: its changes include this one's).
   */
  private advance(number: number, snapshot: string): void {
    if (number < this.applied) return;
    this.applied = number;
    this.snapshot = snapshot;
  }

  /**
   * Removes the entries of transactions that ended before the previous prune (a minute ago at
   * least), and raises the removal mark with them, in one transaction: a look sees both or neither.
   */
  async prune(): Promise<void> {
    const row = await this.driver.get('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin', []);
    const below = this.pruneBelow;
    this.pruneBelow = String(row!.xmin);
    if (below === undefined) return;
    await this.driver.transaction(async () => {
      await this.driver.run(`DELETE FROM "${ROW_CHANGES_TABLE}" WHERE xid < $1::xid8`, [below]);
      await this.driver.run(
        `UPDATE "${ROW_CHANGES_PRUNED_TABLE}" SET xid = GREATEST(xid, $1::xid8) WHERE id = 1`,
        [below],
      );
    });
  }

  close(): void {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.pruneTimer = undefined;
  }
}
