import type { Dialect } from './dialect.ts';

export type SqlRow = Record<string, unknown>;

/** The few things the shared SQL store asks of a database connection. */
export interface SqlDriver {
  readonly dialect: Dialect;
  all(sql: string, params: unknown[]): Promise<SqlRow[]>;
  get(sql: string, params: unknown[]): Promise<SqlRow | undefined>;
  run(sql: string, params: unknown[]): Promise<{ changes: number }>;
  /** A write statement with RETURNING; answers the returned rows. */
  runReturning(sql: string, params: unknown[]): Promise<SqlRow[]>;
  /** Schema statements (CREATE/ALTER/DROP); several may be separated by semicolons. */
  exec(sql: string): Promise<void>;
  /** All-or-nothing; a call made inside `fn` (same async context) joins it as a savepoint. */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /** Called (and awaited) after any rollback, before the error reaches the caller. */
  onRollback(listener: () => Promise<void>): void;
  close(): Promise<void>;
}
