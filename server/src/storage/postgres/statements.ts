import type { SqlRow, Statement } from '../sql/driver.ts';

/**
 * The shapes of the store's statements that the PostgreSQL driver runs its own way: one-row
 * inserts grouped into one statement, reads-then-writes as one statement, and the write lane of
 * an update by id.
 */

/**
 * A one-row INSERT of a class row (objectId first, every value a placeholder in order, some typed)
 * that a group may run together with others of the same text: its head and its row of values.
 */
const ROW_INSERT =
  /^(INSERT INTO ("[^"]+") \("objectId"(?:, "[^"]+")*\)) VALUES (\(\$1(?:::[a-z0-9]+)?(?:, \$\d+(?:::[a-z0-9]+)?)*\))$/;

/** How to write several rows of a ROW_INSERT in one statement. */
export interface RowsInsert {
  head: string;
  /** The table it writes, quoted. */
  table: string;
  /** The row of values with its placeholders numbered from `offset + 1`. */
  row(offset: number): string;
  width: number;
}

/** The RowsInsert of `sql`, or undefined when it is not a ROW_INSERT with placeholders $1..$n in order. */
export function rowsInsertOf(sql: string): RowsInsert | undefined {
  const m = ROW_INSERT.exec(sql);
  if (!m) return undefined;
  const values = m[3]!;
  const numbers = [...values.matchAll(/\$(\d+)/g)].map((p) => Number(p[1]));
  if (!numbers.every((n, i) => n === i + 1)) return undefined;
  return {
    head: m[1]!,
    table: m[2]!,
    row: (offset) => values.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`),
    width: numbers.length,
  };
}

/**
 * Most statements prepared by name on each connection (past it, statements run unnamed), and most
 * statement texts whose shape the driver remembers.
 */
export const MAX_PREPARED = 1000;

/**
 * Lanes of group commits. Lane 0 takes every write but one kind: an update by id that leaves the
 * read list alone, which goes to the lane of its row. A group's statements run one after another
 * on one connection, and an update's share of PostgreSQL's work (a new row version, every index,
 * the GIN lists) made that one connection the limit: two lanes use two server processes.
 *
 * Two lanes never lock one class row for such updates (a row has one lane). Lane 0 may lock a row
 * of another lane (a change of its read list); every group runs its writes in lock order
 * (`lockOrder`, write-groups.ts), so the lanes' groups, and those of other instances, never
 * deadlock on rows. The `_ACL_COUNT` entries that inserts, deletes and read-list changes update are
 * kept per connection (functions.ts), so they are no rows two groups share.
 */
export const WRITE_LANES = 2;

/** The store's read of a row by id (`SELECT * FROM "T" WHERE "objectId" = $1`): the table's name. */
const BY_ID_READ = /^SELECT \* FROM ("[^"]+") WHERE "objectId" = \$1$/;

/** The lane of a read-then-write (see WRITE_LANES). */
export function writeLane(read: Statement, write: Statement): number {
  if (read.params.length !== 1 || !BY_ID_READ.test(read.sql)) return 0;
  if (!write.sql.startsWith('UPDATE ') || write.sql.includes('"_rperm" =')) return 0;
  const id = String(read.params[0]);
  let hash = 0;
  for (let i = 0; i < id.length; i++) hash = (Math.imul(hash, 31) + id.charCodeAt(i)) | 0;
  return (hash >>> 0) % WRITE_LANES;
}

/**
 * The row a write locks, as its place in its group's lock order (write-groups.ts): the table, then
 * inserts before updates, then the objectId. Undefined for a write of no known row (a group runs
 * it where it came). `read` and `write` are a read-then-write's, `insert` a one-row INSERT's
 * shape with its parameters (objectId first).
 */
export function lockOrder(
  of: { read: Statement; write: Statement } | { insert: RowsInsert; params: unknown[] },
): string | undefined {
  if ('insert' in of) return `${of.insert.table}\0i\0${String(of.params[0])}`;
  if (of.read.params.length !== 1) return undefined;
  const table = BY_ID_READ.exec(of.read.sql)?.[1];
  return table === undefined ? undefined : `${table}\0u\0${String(of.read.params[0])}`;
}

/** The column that tells the read row from the written one in `readThenWriteStatement`'s answer. */
const SIDE = 'bds_side';

/**
 * A read of one row with FOR UPDATE and a write of it (with RETURNING *) as one statement. The
 * read is a materialized CTE that the answer scans first, so the row is locked before the write's
 * CTE runs; under READ COMMITTED both then work on the row's newest version. The read's
 * placeholders follow the write's.
 */
export function readThenWriteStatement(read: Statement, write: Statement): Statement {
  const offset = write.params.length;
  const readSql = read.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
  return {
    sql:
      `WITH "bds_read" AS MATERIALIZED (${readSql} FOR UPDATE), "bds_written" AS (${write.sql}) ` +
      `SELECT false AS "${SIDE}", * FROM "bds_read" UNION ALL SELECT true, * FROM "bds_written"`,
    params: [...write.params, ...read.params],
  };
}

export function splitReadAndWritten(rows: SqlRow[]): { read: SqlRow[]; written: SqlRow[] } {
  const read: SqlRow[] = [];
  const written: SqlRow[] = [];
  for (const row of rows) {
    const side = row[SIDE];
    delete row[SIDE];
    (side ? written : read).push(row);
  }
  return { read, written };
}
