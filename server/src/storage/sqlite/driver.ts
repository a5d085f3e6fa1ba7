import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import {
  type FollowUp,
  SnapshotInTransactionError,
  SnapshotWriteError,
  type SqlDriver,
  type SqlRow,
  type Statement as SqlStatement,
  storeLimitError,
} from '../sql/driver.ts';
import { together } from '../sql/many-rows.ts';
import { BACKSTOP_PAGES, Checkpointer } from './checkpoints.ts';
import { sqliteDialect } from './dialect.ts';
import { registerFunctions } from './functions.ts';

type Statement = Database.Statement;

/**
 * Rows are read as arrays (better-sqlite3's raw mode) and made objects here, where every row of a
 * statement takes the same shape; the binding builds each row's object property by property.
 * Measured through this driver, the two versions alternated in one process: a find of 100 rows of
 * the bench's class 336-352 against 443-483 µs; a read by id the same (12-13 µs). As in the
 * binding, a later column of the same name wins.
 *
 * The names must be those of the statement as it ran. A statement's text fixes them, except for
 * `*`, which SQLite expands when it compiles the statement, and again when another connection
 * changed the schema since. So a statement that starts `SELECT * FROM` is run with the schema
 * version read in the same statement (the same snapshot) as its first column, and its names are
 * read again whenever that version changes; any other statement with a `*` keeps object rows.
 */
const STAR_SELECT = 'SELECT * FROM ';
const VERSIONED_SELECT = 'SELECT (SELECT schema_version FROM pragma_schema_version), * FROM ';

interface Prepared {
  statement: Statement;
  /** The row shape of a statement read in raw mode; undefined: object rows (or no rows). */
  shape: RowShape | undefined;
}

interface RowShape {
  /** The first value of each row is the schema version the statement ran against. */
  versioned: boolean;
  version: unknown;
  names: string[];
}

function prepare(db: Database.Database, sql: string): Prepared {
  // SQLite refuses a statement beyond its limits (expression depth, variables) when preparing it.
  try {
    return prepareStatement(db, sql);
  } catch (err) {
    throw storeLimitError(sqliteDialect, err);
  }
}

function prepareStatement(db: Database.Database, sql: string): Prepared {
  const versioned = sql.startsWith(STAR_SELECT);
  if (!versioned && sql.includes('*')) return { statement: db.prepare(sql), shape: undefined };
  const statement = db.prepare(versioned ? VERSIONED_SELECT + sql.slice(STAR_SELECT.length) : sql);
  if (!statement.reader) return { statement, shape: undefined };
  statement.raw(true);
  return { statement, shape: { versioned, version: undefined, names: namesOf(statement, versioned) } };
}

function namesOf(statement: Statement, versioned: boolean): string[] {
  const names = statement.columns().map((c) => c.name);
  return versioned ? names.slice(1) : names;
}

function rowsOf(prepared: Prepared, params: unknown[]): SqlRow[] {
  const { statement, shape } = prepared;
  if (!shape) return statement.all(...params) as SqlRow[];
  const values = statement.all(...params) as unknown[][];
  const rows: SqlRow[] = new Array(values.length);
  for (let r = 0; r < values.length; r++) rows[r] = rowOf(statement, shape, values[r]!);
  return rows;
}

function firstRowOf(prepared: Prepared, params: unknown[]): SqlRow | undefined {
  const { statement, shape } = prepared;
  if (!shape) return statement.get(...params) as SqlRow | undefined;
  const values = statement.get(...params) as unknown[] | undefined;
  return values === undefined ? undefined : rowOf(statement, shape, values);
}

function rowOf(statement: Statement, shape: RowShape, values: unknown[]): SqlRow {
  if (shape.versioned && values[0] !== shape.version) {
    // Compiled against another schema than last time: `*` may name other columns now.
    shape.names = namesOf(statement, true);
    shape.version = values[0];
  }
  const first = shape.versioned ? 1 : 0;
  const row: SqlRow = {};
  for (let i = 0; i < shape.names.length; i++) row[shape.names[i]!] = values[i + first];
  return row;
}

/** Writes outside a transaction that commit together (see autocommit). */
interface WriteGroup {
  committed: Promise<void>;
  settle(err?: unknown): void;
  /** What the group's writes called for once they ran (their versions), run just before the commit. */
  deferred: SqlStatement[];
}

/** The transaction an async context runs in, and what to do once it commits. */
interface TxScope {
  depth: number;
  committed: Array<() => void>;
}

/** A read snapshot: the connection holding its read transaction, and the statements prepared there. */
interface SnapshotScope {
  db: Database.Database;
  statements: Map<string, Prepared>;
  /** Set when the snapshot ended: work its async context still runs reads as any other. */
  ended: boolean;
}

/**
 * better-sqlite3 behind the async driver interface. One writer connection and one reader
 * connection on the same WAL file: reads outside a transaction never see another request's
 * uncommitted batch, and writes are serialised by a lock that a transaction holds until it ends.
 */
export class SqliteDriver implements SqlDriver {
  readonly dialect = sqliteDialect;
  private readonly writer: Database.Database;
  private readonly reader: Database.Database;
  private readonly writerStatements = new Map<string, Prepared>();
  private readonly readerStatements = new Map<string, Prepared>();
  private readonly tx = new AsyncLocalStorage<TxScope>();
  private readonly snapshots = new AsyncLocalStorage<SnapshotScope>();
  private openSnapshots = 0;
  private readonly file: string;
  /** The WAL checkpoint worker (none for `:memory:`). */
  readonly checkpointer: Checkpointer | undefined;
  private readonly mmapBytes: number;
  private locked = false;
  /** The open group of writes outside transactions, holding the lock until it commits. */
  private group: WriteGroup | undefined;
  private readonly waiters: Array<() => void> = [];
  private closed = false;
  private readonly rollbackListeners: Array<() => Promise<void>> = [];

  onRollback(listener: () => Promise<void>): void {
    this.rollbackListeners.push(listener);
  }

  private async rolledBack(): Promise<void> {
    for (const listener of this.rollbackListeners) await listener();
  }

  /**
   * `mmapBytes`: how much of the file SQLite reads through a memory map instead of read calls
   * (full scans of unindexed queries and counts read every page of a class: measured 9-23% faster
   * with 256 MB on issue 11's classes). 0 reads with read calls only.
   */
  constructor(
    file: string,
    options: {
      synchronous?: 'normal' | 'full';
      mmapBytes?: number;
      /** Told when the checkpoint worker fails (checkpoints.ts); the writer's backstop still runs. */
      onCheckpointError?: (message: string) => void;
    } = {},
  ) {
    if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
    this.file = file;
    this.mmapBytes = Math.floor(options.mmapBytes ?? 0);
    this.writer = new Database(file);
    // WAL with synchronous=NORMAL: a commit is in the WAL before the call returns, so a crash of
    // the process (kill -9) never loses an acknowledged write; only a power cut could (FULL: not
    // even that, at the cost of a disk flush per commit).
    this.writer.pragma('journal_mode = WAL');
    this.writer.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    this.writer.pragma('busy_timeout = 5000');
    this.writer.pragma(`mmap_size = ${this.mmapBytes}`);
    this.writer.pragma('foreign_keys = OFF');
    registerFunctions(this.writer);
    this.reader = file === ':memory:' ? this.writer : this.openReader();
    if (file !== ':memory:') {
      // Checkpoints run in a worker thread; the writer's own only as a backstop (checkpoints.ts).
      this.writer.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
      this.checkpointer = new Checkpointer(file, { onError: options.onCheckpointError });
    }
  }

  /** A read-only connection to the file (it never takes the write lock). */
  private openReader(): Database.Database {
    const reader = new Database(this.file, { readonly: true });
    reader.pragma('busy_timeout = 5000');
    reader.pragma(`mmap_size = ${this.mmapBytes}`);
    registerFunctions(reader);
    return reader;
  }

  private statement(db: Database.Database, cache: Map<string, Prepared>, sql: string): Prepared {
    let prepared = cache.get(sql);
    if (!prepared) {
      prepared = prepare(db, sql);
      if (cache.size > 2000) cache.clear();
      cache.set(sql, prepared);
    }
    return prepared;
  }

  /**
   * Reads inside a transaction see its writes (the writer). Outside one, the writer too when no
   * transaction is open on it: it then holds nothing uncommitted, and reading there is cheaper (the
   * reader pays for a read transaction on the WAL per statement; measured 3 µs a primary-key read).
   * Only while another request's transaction is open do reads go to the reader, which never sees
   * that transaction's uncommitted rows. Inside a snapshot, reads go to the snapshot's connection.
   */
  private readStatement(sql: string): Prepared {
    const snapshot = this.openSnapshot();
    if (snapshot) return this.statement(snapshot.db, snapshot.statements, sql);
    if (this.tx.getStore() || !this.writer.inTransaction) {
      return this.statement(this.writer, this.writerStatements, sql);
    }
    return this.statement(this.reader, this.readerStatements, sql);
  }

  async all(sql: string, params: unknown[]): Promise<SqlRow[]> {
    return rowsOf(this.readStatement(sql), params);
  }

  async get(sql: string, params: unknown[]): Promise<SqlRow | undefined> {
    return firstRowOf(this.readStatement(sql), params);
  }

  /**
   * Runs a write (DDL) on the writer connection: at once inside the caller's own transaction or
   * when no transaction holds the lock, otherwise after that transaction ends.
   */
  private async write<T>(execute: () => T): Promise<T> {
    if (this.openSnapshot()) throw new SnapshotWriteError();
    if (this.tx.getStore() || !this.locked) return execute();
    await this.acquire();
    try {
      return execute();
    } finally {
      this.release();
    }
  }

  /**
   * A one-statement write outside any transaction (most creates, updates and deletes). Such writes
   * are committed in groups: the first opens a transaction that commits on the next turn of the
   * event loop (setImmediate), and the writes that arrive meanwhile run inside it. A commit costs
   * more than the write itself (a WAL append per commit: measured 18-33 µs for one update alone,
   * 4 µs each in groups of 16). Each write's promise settles only after its group commits, so
   * nothing is acknowledged before it is durable, and a failed commit fails every write of the group.
   * A statement that fails alone (a constraint) is undone alone, as SQLite does in any transaction.
   */
  private autocommit<T>(execute: () => T): Promise<T> {
    // It would run on the writer, outside the snapshot: refused rather than committed there.
    if (this.openSnapshot()) return Promise.reject(new SnapshotWriteError());
    if (this.tx.getStore()) {
      try {
        return Promise.resolve(execute());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    if (this.group) return this.inGroup(this.group, execute);
    if (!this.locked) {
      this.locked = true;
      return this.openGroup(execute);
    }
    return this.acquire().then(() => this.openGroup(execute));
  }

  /** Called with the lock held: begins the group's transaction and runs its first write. */
  private openGroup<T>(execute: () => T): Promise<T> {
    try {
      this.writer.exec('BEGIN IMMEDIATE');
    } catch (err) {
      this.release();
      return Promise.reject(err);
    }
    let settle!: (err?: unknown) => void;
    const committed = new Promise<void>((resolve, reject) => {
      settle = (err) => (err === undefined ? resolve() : reject(err));
    });
    // Every write of the group awaits it; this keeps a group whose only write failed from an
    // unhandled rejection.
    committed.catch(() => undefined);
    const group: WriteGroup = { committed, settle, deferred: [] };
    this.group = group;
    setImmediate(() => this.endGroup(group));
    return this.inGroup(group, execute);
  }

  private inGroup<T>(group: WriteGroup, execute: () => T): Promise<T> {
    let result: T;
    try {
      result = execute();
    } catch (err) {
      // An error that ends the whole transaction (not a constraint: the engine undoes that
      // statement only) ends the group with it.
      if (!this.writer.inTransaction) this.endGroup(group, err);
      return Promise.reject(err);
    }
    return group.committed.then(() => result);
  }

  /** Commits the group (or, given an error, settles it as failed), then hands on the lock. */
  private endGroup(group: WriteGroup, failure?: unknown): void {
    if (this.group !== group) return;
    this.group = undefined;
    let error = failure;
    if (error === undefined) {
      try {
        for (const { sql, params } of together(group.deferred))
          this.statement(this.writer, this.writerStatements, sql).statement.run(...params);
        this.writer.exec('COMMIT');
      } catch (err) {
        error = err;
      }
    }
    if (error !== undefined && this.writer.inTransaction) this.writer.exec('ROLLBACK');
    this.release();
    group.settle(error);
    if (error !== undefined) void this.rolledBack();
  }

  run(sql: string, params: unknown[], then?: FollowUp<{ changes: number }>): Promise<{ changes: number }> {
    const execute = () => ({
      changes: this.statement(this.writer, this.writerStatements, sql).statement.run(...params).changes,
    });
    return this.autocommit(then ? () => this.followed(execute, then) : execute);
  }

  /**
   * A write and its follow-up (its row's version). In a group, the follow-up waits for the group's
   * end, where those of all its writes run together, before the commit: one that fails fails the
   * whole group, and nothing of it commits. In a transaction, it runs at once under a savepoint: a
   * follow-up that fails undoes the write with it, and nothing else.
   */
  private followed<R>(execute: () => R, then: FollowUp<R>): R {
    const group = this.tx.getStore() ? undefined : this.group;
    if (group) {
      const result = execute();
      let next: SqlStatement | undefined;
      try {
        next = then(result);
      } catch (err) {
        // The write ran in the group: failing it alone would leave it to commit with the others.
        this.endGroup(group, err);
        throw err;
      }
      if (next) group.deferred.push(next);
      return result;
    }
    this.unit ??= this.writer.transaction((fn: () => unknown) => fn());
    return this.unit(() => {
      const result = execute();
      const next = then(result);
      if (next) this.statement(this.writer, this.writerStatements, next.sql).statement.run(...next.params);
      return result;
    }) as R;
  }

  /** better-sqlite3's transaction function: inside an open transaction, a savepoint. */
  private unit: ((fn: () => unknown) => unknown) | undefined;

  /** Like run, for statements with RETURNING. */
  runReturning(sql: string, params: unknown[]): Promise<SqlRow[]> {
    return this.autocommit(() => rowsOf(this.statement(this.writer, this.writerStatements, sql), params));
  }

  readThenWrite(
    read: SqlStatement,
    write: SqlStatement,
    then?: FollowUp<{ read: SqlRow[]; written: SqlRow[] }>,
  ): Promise<{ read: SqlRow[]; written: SqlRow[] }> {
    // better-sqlite3 runs both synchronously on the writer connection, so no other write can land
    // between them (the write is one statement: atomic anyway).
    const execute = () => this.readThenWriteNow(read, write);
    return this.autocommit(then ? () => this.followed(execute, then) : execute);
  }

  private readThenWriteNow(read: SqlStatement, write: SqlStatement): { read: SqlRow[]; written: SqlRow[] } {
    const reader = this.statement(this.writer, this.writerStatements, read.sql);
    const writer = this.statement(this.writer, this.writerStatements, write.sql);
    return {
      read: rowsOf(reader, read.params),
      written: rowsOf(writer, write.params),
    };
  }

  inTransaction(): boolean {
    return this.tx.getStore() !== undefined;
  }

  /** Any transaction or write group open on the writer (the store's row cache adds nothing then). */
  hasUncommittedWrites(): boolean {
    return this.writer.inTransaction;
  }

  private dataVersion: Database.Statement | undefined;
  private lastDataVersion: unknown;

  /**
   * Whether another connection (another process on the same file) committed since the last call:
   * SQLite's data_version changes for commits made by other connections only.
   */
  changedElsewhere(): boolean {
    this.dataVersion ??= this.writer.prepare('PRAGMA data_version').pluck();
    const version = this.dataVersion.get();
    const changed = this.lastDataVersion !== undefined && version !== this.lastDataVersion;
    this.lastDataVersion = version;
    return changed;
  }

  afterCommit(fn: () => void): void {
    const scope = this.tx.getStore();
    if (scope) scope.committed.push(fn);
    else fn();
  }

  exec(sql: string): Promise<void> {
    return this.write(() => {
      this.writer.exec(sql);
      this.resetStatements();
    });
  }

  /** Prepared statements hold the old table shape after DDL; drop them. */
  private resetStatements(): void {
    this.writerStatements.clear();
    this.readerStatements.clear();
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.openSnapshot()) throw new SnapshotWriteError();
    const current = this.tx.getStore();
    if (current) {
      const name = `sp${current.depth + 1}`;
      const scope: TxScope = { depth: current.depth + 1, committed: [] };
      this.writer.exec(`SAVEPOINT ${name}`);
      try {
        const result = await this.tx.run(scope, fn);
        this.writer.exec(`RELEASE ${name}`);
        current.committed.push(...scope.committed);
        return result;
      } catch (err) {
        this.writer.exec(`ROLLBACK TO ${name}`);
        this.writer.exec(`RELEASE ${name}`);
        await this.rolledBack();
        throw err;
      }
    }
    await this.acquire();
    const scope: TxScope = { depth: 0, committed: [] };
    let result: T;
    try {
      this.writer.exec('BEGIN IMMEDIATE');
      try {
        result = await this.tx.run(scope, fn);
        this.writer.exec('COMMIT');
      } catch (err) {
        if (this.writer.inTransaction) this.writer.exec('ROLLBACK');
        this.tx.disable();
        await this.rolledBack();
        throw err;
      }
    } finally {
      // On Node 20 an enabled AsyncLocalStorage puts a hook on every promise in the process; it is
      // only needed while a transaction runs, and run() enables it again for the next one.
      this.tx.disable();
      this.release();
    }
    for (const callback of scope.committed) callback();
    return result;
  }

  /** The snapshot the calling async context reads in, unless it has ended. */
  private openSnapshot(): SnapshotScope | undefined {
    const scope = this.snapshots.getStore();
    return scope && !scope.ended ? scope : undefined;
  }

  inSnapshot(): boolean {
    return this.openSnapshot() !== undefined;
  }

  /**
   * A read transaction on a read-only connection of its own, opened for the snapshot: never the
   * writer (the write lock would stop the service's writes for as long as `fn` runs), nor the
   * shared reader (the other requests' reads routed there would see the snapshot's old state).
   * Its first read fixes the WAL snapshot; writers go on and checkpoints stop at it until it ends.
   */
  async snapshot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.openSnapshot()) return fn();
    if (this.tx.getStore()) throw new SnapshotInTransactionError();
    if (this.reader !== this.writer) {
      const db = this.openReader();
      return this.runSnapshot(
        { db, statements: new Map(), ended: false },
        fn,
        // BEGIN alone reads nothing: the first read decides which commits the transaction sees.
        () => db.prepare('SELECT count(*) FROM sqlite_master').get(),
        () => db.close(),
      );
    }
    // `:memory:` has one connection, which writes too: the snapshot holds the write lock, so the
    // process's writes wait until it ends (no other process can open that database).
    await this.acquire();
    const db = this.writer;
    return this.runSnapshot(
      { db, statements: this.writerStatements, ended: false },
      fn,
      () => db.pragma('query_only = ON'),
      () => {
        try {
          db.pragma('query_only = OFF');
        } finally {
          this.release();
        }
      },
    );
  }

  /** `fn` in a read transaction on `scope.db`: `begun` runs after BEGIN, `ended` once it ended (always). */
  private async runSnapshot<T>(
    scope: SnapshotScope,
    fn: () => Promise<T>,
    begun: () => void,
    ended: () => void,
  ): Promise<T> {
    this.openSnapshots++;
    let failed = true;
    try {
      scope.db.exec('BEGIN');
      begun();
      const result = await this.snapshots.run(scope, fn);
      failed = false;
      return result;
    } finally {
      this.snapshotEnded(scope);
      try {
        if (scope.db.inTransaction) scope.db.exec(failed ? 'ROLLBACK' : 'COMMIT');
      } finally {
        ended();
      }
    }
  }

  private snapshotEnded(scope: SnapshotScope): void {
    scope.ended = true;
    // As for transactions: an enabled AsyncLocalStorage costs every promise; off once none is open.
    if (--this.openSnapshots === 0) this.snapshots.disable();
  }

  private acquire(): Promise<void> {
    if (!this.locked) {
      this.locked = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.locked) await this.acquire().then(() => this.release());
    await this.checkpointer?.close();
    if (this.reader !== this.writer) this.reader.close();
    this.writer.pragma('wal_checkpoint(TRUNCATE)');
    this.writer.close();
  }
}
