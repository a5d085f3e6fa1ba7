import type pg from 'pg';
import type { SqlRow, Statement } from '../sql/driver.ts';
import { manyRowsOf, SINGLE_ROW_INSERT } from '../sql/many-rows.ts';
import { MAX_PREPARED, type RowsInsert, rowsInsertOf } from './statements.ts';
import type { Outcome, Together } from './write-groups.ts';

/** Runs one statement on one connection, prepared by name unless `prepared` is false (the driver's). */
export type Execute = (
  client: pg.ClientBase,
  sql: string,
  params: unknown[],
  prepared?: boolean,
) => Promise<pg.QueryResult<SqlRow>>;

/** Between a one-row INSERT's text and its follow-up's in a group's key (no SQL text holds U+0000). */
const FOLLOWED_BY = '\u0000';

/** A one-row INSERT that met a taken unique value, answered without ending the transaction it ran in. */
export class DuplicateRow extends Error {
  readonly code = '23505';
  constructor() {
    super('duplicate key value violates a unique index');
  }
}

/**
 * One-row INSERTs as the PostgreSQL driver writes them: alone without ending the transaction they
 * run in, and, in a group commit (write-groups.ts), the rows of several writes of one text in one
 * statement.
 *
 * In SQLite a statement that fails inside a transaction is undone alone and the transaction goes
 * on (the sign-up that meets a taken name then says which one); in PostgreSQL it ends the
 * transaction. So inside a transaction (a group's too) a one-row INSERT runs with ON CONFLICT DO
 * NOTHING and a row not inserted is answered as the unique violation it would have been, with
 * the transaction intact (cheaper than a savepoint around every write).
 */
export class RowInserts {
  /** Statement texts known to be (or not to be) a ROW_INSERT, with the way to write several rows. */
  private readonly shapes = new Map<string, RowsInsert | null>();

  constructor(private readonly execute: Execute) {}

  /** The way to write several rows of `sql`'s text, when it is a one-row INSERT of a class row. */
  shapeOf(sql: string): RowsInsert | undefined {
    let shape = this.shapes.get(sql);
    if (shape === undefined) {
      shape = rowsInsertOf(sql) ?? null;
      if (this.shapes.size >= MAX_PREPARED) this.shapes.clear();
      this.shapes.set(sql, shape);
    }
    return shape ?? undefined;
  }

  /**
   * What a group needs to run `sql` with other writes of its text (`runTogether`), undefined when
   * it is no one-row INSERT; `next` is the statement written after each row (its version).
   */
  together(sql: string, params: unknown[], next?: Statement): Together | undefined {
    if (!this.shapeOf(sql)) return undefined;
    return next
      ? { key: `${sql}${FOLLOWED_BY}${next.sql}`, params: [params, next.params] }
      : { key: sql, params };
  }

  /** A write on a connection inside a transaction: a one-row INSERT answers a taken value as DuplicateRow. */
  async writeOn(client: pg.ClientBase, sql: string, params: unknown[]): Promise<pg.QueryResult<SqlRow>> {
    if (!SINGLE_ROW_INSERT.test(sql) || / ON CONFLICT /i.test(sql)) return this.execute(client, sql, params);
    const result = await this.execute(client, `${sql} ON CONFLICT DO NOTHING`, params);
    if (result.rowCount === 0) throw new DuplicateRow();
    return result;
  }

  /**
   * The rows of several one-row INSERTs of one `together` key (writes of a group, in order) in one
   * statement: one round trip instead of one per row, which is what a group spends its time on
   * (about 300 µs a statement on this project's machines). A row whose objectId (or another unique
   * value) is taken is not inserted and answers the unique violation, as its own statement would
   * have; of two rows with one objectId, the first is inserted. The statement is not prepared: its
   * text depends on the number of rows. With a follow-up, the follow-ups of the rows written run
   * next, in one statement too.
   */
  async insertRows(client: pg.ClientBase, key: string, rows: unknown[][]): Promise<Outcome[]> {
    const cut = key.indexOf(FOLLOWED_BY);
    if (cut >= 0) {
      const pairs = rows as unknown as Array<[unknown[], unknown[]]>;
      const outcomes = await this.insertRows(
        client,
        key.slice(0, cut),
        pairs.map(([row]) => row),
      );
      const written = pairs.filter((_, i) => outcomes[i]!.ok).map(([, follow]) => follow);
      if (written.length > 0) {
        const many = manyRowsOf(key.slice(cut + FOLLOWED_BY.length), written);
        await this.execute(client, many.sql, many.params, false);
      }
      return outcomes.map((o) => (o.ok ? { ok: true as const, value: { changes: 1 } } : o));
    }
    const shape = this.shapeOf(key)!;
    const values = rows.map((_, r) => shape.row(r * shape.width)).join(', ');
    const text = `${shape.head} VALUES ${values} ON CONFLICT DO NOTHING RETURNING "objectId"`;
    const result = await this.execute(client, text, rows.flat(), false);
    const inserted = new Map<unknown, number>();
    for (const row of result.rows) inserted.set(row.objectId, (inserted.get(row.objectId) ?? 0) + 1);
    return rows.map((params) => {
      const left = inserted.get(params[0]) ?? 0;
      if (left === 0) return { ok: false as const, error: new DuplicateRow() };
      inserted.set(params[0], left - 1);
      const value: Pick<pg.QueryResult<SqlRow>, 'rows' | 'rowCount'> = { rows: [], rowCount: 1 };
      return { ok: true as const, value };
    });
  }
}
