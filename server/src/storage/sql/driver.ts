import { invalidQuery } from '../../kernel/errors.ts';
import type { Dialect } from './dialect.ts';

/** What a caller is told when the engine refuses a statement beyond its own limits. */
export const TOO_COMPLEX_FOR_STORE =
  'Invalid where: it is too complex for the store. Nest fewer subqueries and conditions.';

/**
 * The engine's refusal of a statement beyond its limits (expression depth, bound variables, joined
 * tables) as the caller's 102 in the service's own words; any other error as it is. Both drivers
 * pass every failed statement through here, so no engine text reaches an answer.
 */
export function storeLimitError(dialect: Dialect, err: unknown): unknown {
  return dialect.queryTooComplex(err) ? invalidQuery(TOO_COMPLEX_FOR_STORE) : err;
}

export type SqlRow = Record<string, unknown>;

/** One statement and its parameters. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * What a write calls for once it ran, given its result: one more statement (the row history's
 * version: history.ts) or nothing. It runs in the write's own unit: the same transaction, or
 * outside one the same group commit, so both land or neither does. A one-row INSERT's follow-up
 * may be asked before the INSERT runs, as if it wrote its row (PostgreSQL runs the creates of a
 * group together): it must not depend on more than that, and runs only if the row was written.
 */
export type FollowUp<R> = (result: R) => Statement | undefined;

/** The few things the shared SQL store asks of a database connection. */
export interface SqlDriver {
  readonly dialect: Dialect;
  all(sql: string, params: unknown[]): Promise<SqlRow[]>;
  get(sql: string, params: unknown[]): Promise<SqlRow | undefined>;
  /** `then`: what the write calls for once it ran (see FollowUp). */
  run(sql: string, params: unknown[], then?: FollowUp<{ changes: number }>): Promise<{ changes: number }>;
  /** A write statement with RETURNING; answers the returned rows. */
  runReturning(sql: string, params: unknown[]): Promise<SqlRow[]>;
  /**
   * A read and a write (with RETURNING) as one unit: no other write lands between them. Answers the
   * rows of both. Cheaper than a transaction where the engine allows it. `then`: what the write calls
   * for once it ran (see FollowUp).
   */
  readThenWrite(
    read: Statement,
    write: Statement,
    then?: FollowUp<{ read: SqlRow[]; written: SqlRow[] }>,
  ): Promise<{ read: SqlRow[]; written: SqlRow[] }>;
  /** Schema statements (CREATE/ALTER/DROP); several may be separated by semicolons. */
  exec(sql: string): Promise<void>;
  /** All-or-nothing; a call made inside `fn` (same async context) joins it as a savepoint. */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /** True while the calling async context runs inside a transaction. */
  inTransaction(): boolean;
  /**
   * Runs `fn` with every read it makes (same async context) seeing the database as committed when
   * `snapshot` was called, while writes elsewhere go on unblocked. Writes inside `fn` are refused
   * (SnapshotWriteError); a call inside a snapshot runs in it; a call inside a transaction is refused.
   */
  snapshot<T>(fn: () => Promise<T>): Promise<T>;
  /** True while the calling async context runs inside a snapshot. */
  inSnapshot(): boolean;
  /**
   * Runs `fn` once the current transaction commits (dropped if it, or the savepoint it was
   * registered in, rolls back); outside a transaction, at once.
   */
  afterCommit(fn: () => void): void;
  /** A table changed elsewhere: statements prepared against it are prepared again. */
  tablesChanged?(): void;
  /** Called (and awaited) after any rollback, before the error reaches the caller. */
  onRollback(listener: () => Promise<void>): void;
  close(): Promise<void>;
}

/** A write (or a transaction) attempted inside a read snapshot; the snapshot itself goes on. */
export class SnapshotWriteError extends Error {
  constructor() {
    super('Writes are refused inside a read snapshot.');
    this.name = 'SnapshotWriteError';
  }
}

/** A snapshot asked for inside a transaction, whose reads must see its own uncommitted writes. */
export class SnapshotInTransactionError extends Error {
  constructor() {
    super('A read snapshot cannot start inside a transaction.');
    this.name = 'SnapshotInTransactionError';
  }
}
