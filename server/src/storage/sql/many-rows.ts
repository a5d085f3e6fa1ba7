import type { Statement } from './driver.ts';

/**
 * One-row INSERTs of one text made one statement of many rows, as both drivers run the versions a
 * group of writes leaves (postgres/write-groups.ts, sqlite/driver.ts).
 */

/** An INSERT of one row of values, without RETURNING (the store's inserts). */
export const SINGLE_ROW_INSERT = /^INSERT INTO [^;]* VALUES \([^;]*\)$/s;

/**
 * Several rows of a one-row INSERT as one statement, each row's parameters in `rows`. Numbered
 * placeholders (`... VALUES ($1, ..., $n)`, in order) are numbered on for each row; positional
 * ones (`?`) repeat as they are.
 */
export function manyRowsOf(sql: string, rows: unknown[][]): Statement {
  const at = sql.lastIndexOf(' VALUES (');
  const head = sql.slice(0, at);
  const values = sql.slice(at + ' VALUES '.length);
  const width = rows[0]!.length;
  const row = (offset: number) => values.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
  return { sql: `${head} VALUES ${rows.map((_, r) => row(r * width)).join(', ')}`, params: rows.flat() };
}

/** Most rows `together` puts in one statement. */
const MAX_ROWS_TOGETHER = 256;

/**
 * Statements to run in order, with each run of one-row INSERTs of one text (the versions a group's
 * updates leave, say) made one statement of many rows: one round trip (PostgreSQL) or one
 * statement's overhead (SQLite) instead of one per row.
 */
export function together(statements: Statement[]): Statement[] {
  const merged: Statement[] = [];
  for (let i = 0; i < statements.length; ) {
    const { sql } = statements[i]!;
    let end = i + 1;
    if (SINGLE_ROW_INSERT.test(sql) && !/ ON CONFLICT /i.test(sql)) {
      while (end < statements.length && end - i < MAX_ROWS_TOGETHER && statements[end]!.sql === sql) end++;
    }
    merged.push(
      end - i === 1
        ? statements[i]!
        : manyRowsOf(
            sql,
            statements.slice(i, end).map((s) => s.params),
          ),
    );
    i = end;
  }
  return merged;
}
