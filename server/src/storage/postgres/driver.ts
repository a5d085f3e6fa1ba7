import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { Dialect } from '../sql/dialect.ts';
import {
  type FollowUp,
  SnapshotInTransactionError,
  SnapshotWriteError,
  type SqlDriver,
  type SqlRow,
  type Statement,
  storeLimitError,
} from '../sql/driver.ts';
import { together } from '../sql/many-rows.ts';
import { findPostgis, postgresDialect, postgresDialectFor } from './dialect.ts';
import { ACL_COUNT_SHARD, functionsSql } from './functions.ts';
import { RowChangeFeed } from './row-changes.ts';
import { DuplicateRow, RowInserts } from './row-inserts.ts';
import { JOIN_SQL, SoleLease } from './sole-lease.ts';
import {
  lockOrder,
  MAX_PREPARED,
  readThenWriteStatement,
  splitReadAndWritten,
  WRITE_LANES,
  writeLane,
} from './statements.ts';
import { type Defer, WriteGroups } from './write-groups.ts';

/** The transaction an async context runs in (on one checked-out client), and what to do once it commits. */
interface TxScope {
  client: pg.PoolClient;
  depth: number;
  committed: Array<() => void>;
  /** Set when this transaction or savepoint ended. */
  ended: boolean;
  /**
   * The outermost transaction's end: once it ended, work its async context still runs (a call
   * started and not awaited) goes to the pool, as the SQLite driver's does.
   */
  top: { ended: boolean };
  /** A read snapshot (see snapshot): reads run on its client, writes are refused. */
  readOnly?: boolean;
}

/** pg's type ids whose text the store reads itself. */
const INT8 = 20;
const NUMERIC = 1700;
const JSON_OID = 114;
const JSONB = 3802;

/**
 * jsonb and json read as their text (the shared store decodes JSON text, as from SQLite); counts
 * (bigint) and sums (numeric) as numbers. Everything else as pg reads it.
 */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === JSON_OID || oid === JSONB) return (text: string) => text;
    if (oid === INT8 || oid === NUMERIC) return (text: string) => Number(text);
    return pg.types.getTypeParser(oid, format as any);
  },
} as unknown as pg.CustomTypesConfig;

/** Key of the session advisory lock held while an instance starts (functions, tables, migrations). */
const START_LOCK = "hashtext(current_schema() || ':bds-start')";

/**
 * The URI with the session's time zone set to UTC (kept with any `options` it has, such as a
 * search_path): text dates without a zone read as UTC, as the service reads them.
 */
function inUtc(connectionString: string): string {
  const url = new URL(connectionString);
  const options = url.searchParams.get('options');
  url.searchParams.set('options', `${options ? `${options} ` : ''}-c TimeZone=UTC`);
  return url.toString();
}

/**
 * PostgreSQL text cannot hold U+0000 (SQLite's can): a value with one is the caller's bad input,
 * refused before it reaches the server (whose error would be a 500).
 */
function checkParams(params: unknown[]): void {
  for (const value of params) if (typeof value === 'string' && value.includes('\u0000')) throw nulError();
}

const nulError = () =>
  new BdsError(ErrorCode.INVALID_JSON, 'A value holds the character U+0000, which the store cannot keep.');

/** The server's refusal of U+0000 (in text, or as a `\u0000` escape in jsonb) as that same error. */
function translated(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '22021' || code === '22P05' ? nulError() : storeLimitError(postgresDialect, err);
}

/**
 * An error the server answered, or a value refused before it was sent (the connection still
 * works), as opposed to a lost connection.
 */
const fromServer = (err: unknown): boolean => err instanceof pg.DatabaseError || err instanceof BdsError;

/**
 * A prepared statement planned before its table changed (a column added elsewhere): the server
 * refuses to run it rather than answer rows of another shape.
 */
const STALE_PLAN = '0A000';

/** The server ended a transaction to break a deadlock. */
const DEADLOCK = '40P01';

export interface PostgresDriverOptions {
  /** Most connections the pool opens. */
  poolSize: number;
}

/**
 * node-postgres behind the async driver interface: a pool of connections; a statement outside a
 * transaction runs on any of them, a transaction on one checked-out client that the async context
 * carries (AsyncLocalStorage), nested calls as savepoints. Placeholders are `$n`.
 */
export class PostgresDriver implements SqlDriver {
  /** `postgresDialect`, with PostGIS's distances once `started` found it installed. */
  dialect: Dialect = postgresDialect;
  private readonly pool: pg.Pool;
  private readonly tx = new AsyncLocalStorage<TxScope>();
  private readonly rollbackListeners: Array<() => Promise<void>> = [];
  /** Group commits, one per lane (WRITE_LANES); lane 0 takes every write but updates by id. */
  private readonly lanes: WriteGroups[];
  private closed = false;
  /** Groups that met a deadlock and ran their writes again alone (none, with writes in lock order). */
  deadlocks = 0;
  /** Connections that took their `_ACL_COUNT` shard (functions.ts) and their member lock (sole-lease.ts). */
  private readonly sharded = new WeakSet<pg.ClientBase>();
  /** Whether this instance is the only one using the schema (sole-lease.ts). */
  private readonly lease: SoleLease;
  /** Writes begun and not yet committed or undone (the row cache's checks while sole). */
  private openWrites = 0;
  /** The committed row changes every instance's row cache catches up with (row-changes.ts). */
  readonly rowChanges: RowChangeFeed;
  /** One-row INSERTs: alone inside a transaction, several rows in one statement in a group. */
  private readonly inserts = new RowInserts((client, sql, params, prepared) =>
    this.execute(client, sql, params, prepared),
  );
  /**
   * Prepared statements: each statement text gets a name, so each connection has the server parse
   * and plan it once rather than on every call. A schema change starts a new generation of names,
   * as the old plans may read tables as they were; a connection drops the older generations'
   * statements when next checked out.
   */
  private generation = 0;
  private names = new Map<string, string>();
  private readonly clientGenerations = new WeakMap<pg.ClientBase, number>();

  constructor(connectionString: string, options: PostgresDriverOptions) {
    this.pool = new pg.Pool({ connectionString: inUtc(connectionString), max: options.poolSize, types });
    this.lease = new SoleLease({
      connect: async () => {
        const client = new pg.Client({ connectionString: inUtc(connectionString), types });
        await client.connect();
        return client;
      },
      becameSole: () => this.rowChanges.becameSole(),
    });
    this.rowChanges = new RowChangeFeed(this, this.lease, () => this.openWrites);
    // An idle client's connection dropped by the server: the pool removes it; nothing to do here.
    this.pool.on('error', () => undefined);
    this.pool.on('connect', (client) => this.clientGenerations.set(client, this.generation));
    this.lanes = Array.from(
      { length: WRITE_LANES },
      () =>
        new WriteGroups({
          checkout: () => this.checkout(),
          leavesTransactionIntact: (err) => err instanceof DuplicateRow,
          fromServer,
          runTogether: (client, key, rows) => this.inserts.insertRows(client, key, rows),
          runDeferred: async (client, statements) => {
            for (const statement of together(statements))
              await this.execute(client, statement.sql, statement.params, false);
          },
          ranAgainAlone: (err) => {
            if ((err as { code?: unknown } | null)?.code === DEADLOCK) this.deadlocks++;
          },
        }),
    );
  }

  /**
   * A connection of the pool, with its `_ACL_COUNT` shard, its member lock (once no other instance
   * is sole), and without prepared statements from before the last schema change.
   */
  private async checkout(): Promise<pg.PoolClient> {
    const client = await this.pool.connect();
    if (!this.sharded.has(client)) {
      try {
        await client.query(ACL_COUNT_SHARD);
        await client.query(JOIN_SQL, [this.lease.instance]);
        await this.lease.waitUntilNoneSole(client);
      } catch (err) {
        client.release(err as Error);
        throw err;
      }
      this.sharded.add(client);
    }
    if (this.clientGenerations.get(client) !== this.generation) {
      try {
        await client.query('DEALLOCATE ALL');
      } catch (err) {
        client.release(err as Error);
        throw err;
      }
      // pg remembers which names it had the server parse; they are gone now.
      const connection = (client as unknown as { connection?: { parsedStatements?: object } }).connection;
      if (connection?.parsedStatements) connection.parsedStatements = {};
      this.clientGenerations.set(client, this.generation);
    }
    return client;
  }

  /**
   * A table may have changed (this instance ran DDL, or another instance did): statements are
   * prepared again under new names.
   */
  tablesChanged(): void {
    this.generation++;
    this.names = new Map();
  }

  private nameFor(sql: string): string | undefined {
    let name = this.names.get(sql);
    if (name === undefined && this.names.size < MAX_PREPARED) {
      name = `bds${this.generation}_${this.names.size}`;
      this.names.set(sql, name);
    }
    return name;
  }

  /** One statement on one connection, prepared by name unless `prepared` is false. */
  private async execute(
    client: pg.ClientBase,
    sql: string,
    params: unknown[],
    prepared = true,
  ): Promise<pg.QueryResult<SqlRow>> {
    checkParams(params);
    try {
      const name = prepared ? this.nameFor(sql) : undefined;
      return await client.query<SqlRow>({ name, text: sql, values: params });
    } catch (err) {
      // Another instance changed a table since this connection prepared the statement: what runs
      // next (a retry, or the group's writes run again alone) prepares anew.
      if ((err as { code?: unknown }).code === STALE_PLAN) this.tablesChanged();
      throw translated(err);
    }
  }

  /** One statement outside a transaction, on a connection of the pool. */
  private pooled(sql: string, params: unknown[]): Promise<pg.QueryResult<SqlRow>> {
    return this.onPoolClient(async (client) => {
      try {
        return await this.execute(client, sql, params);
      } catch (err) {
        if ((err as { code?: unknown }).code !== STALE_PLAN) throw err;
        return await this.execute(client, sql, params);
      }
    });
  }

  /** `work` on a connection of the pool, given back after it (not reused if its connection broke). */
  private async onPoolClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.checkout();
    let broken: Error | undefined;
    try {
      return await work(client);
    } catch (err) {
      if (!fromServer(err)) broken = err as Error;
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /**
   * Runs `fn` holding the start lock (one instance at a time creates the functions and tables and
   * runs the start-up migrations), with the SQL functions made first.
   */
  async started<T>(fn: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query(`SELECT pg_advisory_lock(${START_LOCK})`);
      try {
        await client.query(functionsSql());
        this.dialect = postgresDialectFor(await findPostgis(async (sql) => (await client.query(sql)).rows));
        return await fn();
      } finally {
        await client.query(`SELECT pg_advisory_unlock(${START_LOCK})`);
      }
    } finally {
      client.release();
    }
  }

  onRollback(listener: () => Promise<void>): void {
    this.rollbackListeners.push(listener);
  }

  private async rolledBack(): Promise<void> {
    for (const listener of this.rollbackListeners) await listener();
  }

  /** The transaction the calling async context runs in, unless it has ended. */
  private scope(): TxScope | undefined {
    const scope = this.tx.getStore();
    return scope && !scope.ended && !scope.top.ended ? scope : undefined;
  }

  /** On the transaction's client inside one, else on any free connection of the pool. */
  private query(sql: string, params: unknown[]): Promise<pg.QueryResult<SqlRow>> {
    const scope = this.scope();
    return scope ? this.execute(scope.client, sql, params) : this.pooled(sql, params);
  }

  /**
   * A write. Outside a transaction it joins a group commit (`WriteGroups`). A one-row INSERT
   * meeting a taken value leaves its transaction intact (row-inserts.ts); updates run under the
   * savepoint of readThenWrite.
   */
  private write(sql: string, params: unknown[]): Promise<pg.QueryResult<SqlRow>> {
    const scope = this.scope();
    if (scope?.readOnly) return Promise.reject(new SnapshotWriteError());
    if (scope) return this.inserts.writeOn(scope.client, sql, params);
    // Refused here rather than in the group, whose transaction a refusal would end.
    checkParams(params);
    const insert = this.inserts.shapeOf(sql);
    return this.writing(() =>
      this.lanes[0]!.submit(
        (client) => this.inserts.writeOn(client, sql, params),
        () => this.pooled(sql, params),
        this.inserts.together(sql, params),
        insert ? lockOrder({ insert, params }) : undefined,
      ),
    );
  }

  /** A write outside any transaction, from its start to its commit (see openWrites). */
  private async writing<T>(work: () => Promise<T>): Promise<T> {
    this.openWrites++;
    this.rowChanges.writeBoundary();
    try {
      return await work();
    } finally {
      this.openWrites--;
      this.rowChanges.writeBoundary();
    }
  }

  async all(sql: string, params: unknown[]): Promise<SqlRow[]> {
    return (await this.query(sql, params)).rows;
  }

  async get(sql: string, params: unknown[]): Promise<SqlRow | undefined> {
    return (await this.query(sql, params)).rows[0];
  }

  async run(
    sql: string,
    params: unknown[],
    then?: FollowUp<{ changes: number }>,
  ): Promise<{ changes: number }> {
    if (!then) return { changes: (await this.write(sql, params)).rowCount ?? 0 };
    const both = async (client: pg.ClientBase, defer?: Defer) => {
      const result = { changes: (await this.inserts.writeOn(client, sql, params)).rowCount ?? 0 };
      await this.followUp(client, then(result), defer);
      return result;
    };
    const scope = this.scope();
    if (scope?.readOnly) throw new SnapshotWriteError();
    if (scope) return both(scope.client);
    checkParams(params);
    const insert = this.inserts.shapeOf(sql);
    // A one-row INSERT's follow-up (its row's version) does not depend on its answer: asked now,
    // as if the row was written, so that creates of one text run together in a group, their rows
    // in one statement and their follow-ups in another (insertRows); it runs only for rows written.
    const next = insert ? then({ changes: 1 }) : undefined;
    checkParams(next?.params ?? []);
    return this.writing(
      () =>
        this.lanes[0]!.submit(
          both,
          () => this.transaction(() => both(this.scope()!.client)),
          next && this.inserts.together(sql, params, next),
          insert ? lockOrder({ insert, params }) : undefined,
        ) as Promise<{ changes: number }>,
    );
  }

  /**
   * The statement a write called for (FollowUp), on the write's connection: in a group, deferred to
   * just before its commit (`defer`), where the group's run them together (write-groups.ts).
   */
  private async followUp(client: pg.ClientBase, next: Statement | undefined, defer?: Defer): Promise<void> {
    if (next && defer) defer(next);
    else if (next) await this.execute(client, next.sql, next.params);
  }

  async runReturning(sql: string, params: unknown[]): Promise<SqlRow[]> {
    return (await this.write(sql, params)).rows;
  }

  /**
   * The read locks the row (FOR UPDATE) before the write changes it, in one statement (one round
   * trip): no write lands between. Outside a transaction it joins a group commit.
   */
  async readThenWrite(
    read: Statement,
    write: Statement,
    then?: FollowUp<{ read: SqlRow[]; written: SqlRow[] }>,
  ): Promise<{ read: SqlRow[]; written: SqlRow[] }> {
    const statement = readThenWriteStatement(read, write);
    const both = async (client: pg.ClientBase, defer?: Defer) => {
      const rows = splitReadAndWritten((await this.execute(client, statement.sql, statement.params)).rows);
      if (then) await this.followUp(client, then(rows), defer);
      return rows;
    };
    const scope = this.scope();
    if (scope?.readOnly) throw new SnapshotWriteError();
    if (scope) return this.transaction(() => both(scope.client));
    checkParams(statement.params);
    const lane = this.lanes[writeLane(read, write)]!;
    return this.writing(() =>
      lane.submit(
        both,
        () => this.transaction(() => both(this.scope()!.client)),
        undefined,
        lockOrder({ read, write }),
      ),
    );
  }

  async exec(sql: string): Promise<void> {
    const scope = this.scope();
    if (scope?.readOnly) throw new SnapshotWriteError();
    try {
      if (scope) await scope.client.query(sql);
      else await this.writing(() => this.onPoolClient((client) => client.query(sql)));
    } finally {
      this.tablesChanged();
    }
  }

  inTransaction(): boolean {
    const scope = this.scope();
    return scope !== undefined && !scope.readOnly;
  }

  inSnapshot(): boolean {
    return this.scope()?.readOnly === true;
  }

  afterCommit(fn: () => void): void {
    const scope = this.scope();
    if (scope && !scope.readOnly) scope.committed.push(fn);
    else fn();
  }

  /**
   * One checked-out connection in a REPEATABLE READ READ ONLY transaction, carried by the async
   * context as a transaction is: every read of `fn` runs on it and sees the database as committed
   * when the transaction took its snapshot (its first statement, run here). It takes no row locks,
   * so writers go on. Writes are refused before they are sent; one that reaches the server anyway
   * is refused by it (a READ ONLY transaction).
   */
  async snapshot<T>(fn: () => Promise<T>): Promise<T> {
    const current = this.scope();
    if (current?.readOnly) return fn();
    if (current) throw new SnapshotInTransactionError();
    const client = await this.checkout();
    const top = { ended: false };
    const scope: TxScope = { client, depth: 0, committed: [], ended: false, top, readOnly: true };
    let broken: Error | undefined;
    // Between reads the connection waits checked out, where pg has no listener for its loss (an
    // 'error' event nobody listens to ends the process): kept here, and the client not reused.
    const lost = (err: Error) => {
      broken ??= err;
    };
    client.on('error', lost);
    const control = async (sql: string) => {
      try {
        await client.query(sql);
      } catch (err) {
        if (!fromServer(err)) broken ??= err as Error;
        throw err;
      }
    };
    try {
      await control('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      let result: T;
      try {
        await control('SELECT 1');
        result = await this.tx.run(scope, fn);
      } catch (err) {
        top.ended = true;
        try {
          await control('ROLLBACK');
        } catch (rollbackError) {
          // Still in the transaction or gone: either way the client is not reused.
          broken ??= rollbackError as Error;
        }
        throw err;
      }
      top.ended = true;
      await control('COMMIT');
      return result;
    } finally {
      top.ended = true;
      client.off('error', lost);
      client.release(broken);
    }
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    const current = this.scope();
    if (current?.readOnly) throw new SnapshotWriteError();
    if (current) {
      const name = `sp${current.depth + 1}`;
      const scope: TxScope = {
        client: current.client,
        depth: current.depth + 1,
        committed: [],
        ended: false,
        top: current.top,
      };
      await current.client.query(`SAVEPOINT ${name}`);
      // The client belongs to the outer transaction only while it runs: a savepoint outliving
      // it (work started and not awaited) must not touch the client again.
      const outerEnded = () => new Error('The transaction ended before this part of it did.');
      try {
        const result = await this.tx.run(scope, fn);
        scope.ended = true;
        if (scope.top.ended) throw outerEnded();
        await current.client.query(`RELEASE SAVEPOINT ${name}`);
        current.committed.push(...scope.committed);
        return result;
      } catch (err) {
        scope.ended = true;
        if (!scope.top.ended) {
          await current.client.query(`ROLLBACK TO SAVEPOINT ${name}`);
          await current.client.query(`RELEASE SAVEPOINT ${name}`);
        }
        await this.rolledBack();
        throw err;
      }
    }
    return this.writing(() => this.outermost(fn));
  }

  /** A transaction of its own, on a connection checked out for it. */
  private async outermost<T>(fn: () => Promise<T>): Promise<T> {
    const client = await this.checkout();
    const top = { ended: false };
    const scope: TxScope = { client, depth: 0, committed: [], ended: false, top };
    let result: T;
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      try {
        result = await this.tx.run(scope, fn);
        top.ended = true;
        await client.query('COMMIT');
      } catch (err) {
        top.ended = true;
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          // The connection is gone: the server ends the transaction; the client is not reused.
          broken = rollbackError as Error;
        }
        await this.rolledBack();
        throw err;
      }
    } finally {
      client.release(broken);
    }
    for (const callback of scope.committed) callback();
    return result;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.rowChanges.close();
    await Promise.all(this.lanes.map((lane) => lane.drain()));
    await this.lease.close();
    await this.pool.end();
  }
}
