import { Params } from './dialect.ts';
import type { SqlDriver } from './driver.ts';
import { tableName } from './names.ts';

/** The schema documents, one row per class. */
export const SCHEMA_TABLE = '_SCHEMA';
/** The app's stored config parameters, one row. */
export const CONFIG_TABLE = '_GlobalConfig';
/**
 * Rows per class and read list (`_rperm` as stored; '' for rows without an ACL), kept by triggers
 * on every class table. A count of a whole class as a caller sums the lists the caller may read:
 * it reads one entry per distinct ACL, never every row's.
 */
export const ACL_COUNT_TABLE = '_ACL_COUNT';

/**
 * The SQL plumbing every part of the SQL store (storage/sql/store.ts) builds its statements with:
 * the driver, its dialect, quoting and positional parameters.
 */
export class SqlStorePart {
  protected readonly q: (identifier: string) => string;

  constructor(protected readonly driver: SqlDriver) {
    this.q = driver.dialect.quote;
  }

  protected get dialect() {
    return this.driver.dialect;
  }

  protected params(): Params {
    return new Params(this.dialect.placeholder);
  }

  /** A class's table, quoted. */
  protected table(className: string): string {
    return this.q(tableName(className));
  }

  /** DDL adding a column (`table` quoted, `definition` its name and type). */
  protected addColumn(table: string, definition: string): string {
    return this.dialect.addColumn?.(table, definition) ?? `ALTER TABLE ${table} ADD COLUMN ${definition};`;
  }
}

/** Internal column names are fixed by the service, never taken from a request; checked anyway. */
export function checkColumnName(name: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`Invalid internal column name: ${name}`);
}

/** A LIMIT or OFFSET, inlined in the SQL text rather than bound: checked to be a whole number. */
export function wholeNumber(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`limit and skip must be whole numbers, got ${n}`);
  return n;
}
