import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { SqlDriver, SqlRow, Statement } from '../sql/driver.ts';
import { postgresDialect } from './dialect.ts';
import { functionsSql } from './functions.ts';

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

/** An INSERT of one row of values, without RETURNING (the store's inserts). */
const SINGLE_ROW_INSERT = /^INSERT INTO [^;]* VALUES \([^;]*\)$/s;

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
  return code === '22021' || code === '22P05' ? nulError() : err;
}

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
  readonly dialect = postgresDialect;
  private readonly pool: pg.Pool;
  private readonly tx = new AsyncLocalStorage<TxScope>();
  private readonly rollbackListeners: Array<() => Promise<void>> = [];
  private closed = false;

  constructor(connectionString: string, options: PostgresDriverOptions) {
    this.pool = new pg.Pool({ connectionString: inUtc(connectionString), max: options.poolSize, types });
    // An idle client's connection dropped by the server: the pool removes it; nothing to do here.
    this.pool.on('error', () => undefined);
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

  /** The transaction's client inside one, else the pool (any free connection). */
  private runner(): pg.Pool | pg.PoolClient {
    return this.scope()?.client ?? this.pool;
  }

  private async query(sql: string, params: unknown[]): Promise<pg.QueryResult<SqlRow>> {
    checkParams(params);
    try {
      return await this.runner().query<SqlRow>(sql, params);
    } catch (err) {
      throw translated(err);
    }
  }

  /**
   * A write. In SQLite a statement that fails inside a transaction is undone alone and the
   * transaction goes on (the sign-up that meets a taken name then says which one); in PostgreSQL
   * it ends the transaction. So inside a transaction a one-row INSERT runs with ON CONFLICT DO
   * NOTHING and a row not inserted is answered as the unique violation it would have been, with
   * the transaction intact (cheaper than a savepoint around every write). Updates run under the
   * savepoint of readThenWrite.
   */
  private async write(sql: string, params: unknown[]): Promise<pg.QueryResult<SqlRow>> {
    if (!this.scope() || !SINGLE_ROW_INSERT.test(sql) || / ON CONFLICT /i.test(sql))
      return this.query(sql, params);
    const result = await this.query(`${sql} ON CONFLICT DO NOTHING`, params);
    if (result.rowCount === 0) {
      throw Object.assign(new Error('duplicate key value violates a unique index'), { code: '23505' });
    }
    return result;
  }

  async all(sql: string, params: unknown[]): Promise<SqlRow[]> {
    return (await this.query(sql, params)).rows;
  }

  async get(sql: string, params: unknown[]): Promise<SqlRow | undefined> {
    return (await this.query(sql, params)).rows[0];
  }

  async run(sql: string, params: unknown[]): Promise<{ changes: number }> {
    return { changes: (await this.write(sql, params)).rowCount ?? 0 };
  }

  async runReturning(sql: string, params: unknown[]): Promise<SqlRow[]> {
    return (await this.write(sql, params)).rows;
  }

  /** The read locks the row (FOR UPDATE) in the same transaction as the write: no write lands between. */
  readThenWrite(read: Statement, write: Statement): Promise<{ read: SqlRow[]; written: SqlRow[] }> {
    return this.transaction(async () => ({
      read: await this.all(`${read.sql} FOR UPDATE`, read.params),
      written: (await this.query(write.sql, write.params)).rows,
    }));
  }

  async exec(sql: string): Promise<void> {
    await this.runner().query(sql);
  }

  inTransaction(): boolean {
    return this.scope() !== undefined;
  }

  afterCommit(fn: () => void): void {
    const scope = this.scope();
    if (scope) scope.committed.push(fn);
    else fn();
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    const current = this.scope();
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
    const client = await this.pool.connect();
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
    await this.pool.end();
  }
}
