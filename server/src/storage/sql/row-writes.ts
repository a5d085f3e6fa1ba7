import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { QueryNode } from '../../kernel/query.ts';
import type { FieldWrite, RelationChange, Row } from '../../kernel/records.ts';
import type { ClassSchema } from '../../kernel/schema.ts';
import type { InsertSpec, InternalValues, RowWrites, UpdateSpec, VersionStamp } from '../adapter.ts';
import type { Params } from './dialect.ts';
import type { SqlDriver, SqlRow, Statement } from './driver.ts';
import type { SqlHistory } from './history.ts';
import { joinTableName } from './names.ts';
import type { RowCache } from './row-cache.ts';
import { checkColumnName, SqlStorePart } from './store-part.ts';
import { decodeRow, encodeAcl, encodeColumn } from './values.ts';
import type { VectorIndexes } from './vector-index.ts';
import { WhereCompiler } from './where.ts';

/** Writes of a class's rows and of their Relation fields' join tables. */
export class SqlRowWrites extends SqlStorePart implements RowWrites {
  /** A row written is forgotten by the rows in memory and told to the vector indexes. */
  constructor(
    driver: SqlDriver,
    private readonly vectors: VectorIndexes,
    private readonly rowCache: RowCache | undefined,
    private readonly history: SqlHistory,
  ) {
    super(driver);
  }

  /** Tells the vector indexes of a row written, once its transaction commits. */
  private wrote(className: string, objectId: string, row: Row | null): void {
    this.rowCache?.forget(className, objectId);
    // Outside a transaction afterCommit would run it at once: skip the closure.
    if (!this.driver.inTransaction()) this.vectors.changed(className, objectId, row);
    else this.driver.afterCommit(() => this.vectors.changed(className, objectId, row));
  }

  async insert(schema: ClassSchema, spec: InsertSpec): Promise<Row> {
    const p = this.params();
    const columns = ['objectId', 'createdAt', 'updatedAt', '_rperm', '_wperm'];
    const { rperm, wperm } = encodeAcl(this.dialect, spec.acl);
    // The row as stored, built from what is bound: the insert needs no RETURNING (which costs the
    // engine a result row per write) to answer it. Columns left out are NULL, which decodes as absent.
    const updatedAt = spec.updatedAt ?? spec.createdAt;
    const stored: SqlRow = {
      objectId: spec.objectId,
      createdAt: spec.createdAt,
      updatedAt,
      _rperm: rperm,
      _wperm: wperm,
    };
    const values = [
      p.add(spec.objectId),
      p.add(spec.createdAt),
      p.add(updatedAt),
      p.add(rperm),
      p.add(wperm),
    ];
    for (const field in spec.values) {
      const { value, type } = spec.values[field]!;
      const encoded = encodeColumn(this.dialect, type, value);
      columns.push(field);
      values.push(p.add(encoded));
      stored[field] = encoded;
    }
    if (spec.internal) {
      for (const [column, value] of Object.entries(spec.internal)) {
        checkColumnName(column);
        columns.push(column);
        values.push(p.add(value));
      }
    }
    const sql = `INSERT INTO ${this.table(schema.className)} (${columns.map(this.q).join(', ')}) VALUES (${values.join(', ')})`;
    if (spec.relations.length === 0) return this.insertRow(schema, spec, sql, p.values, stored);
    return this.driver.transaction(() => this.insertRow(schema, spec, sql, p.values, stored));
  }

  /** The version a write leaves, when it has one to leave. */
  private versionOf(
    className: string,
    objectId: string,
    stamp: VersionStamp | undefined,
    before: Row | null,
    after: Row | null,
  ): Statement | undefined {
    return stamp && this.history.versionStatement(className, objectId, before, after, stamp);
  }

  private async insertRow(
    schema: ClassSchema,
    spec: InsertSpec,
    sql: string,
    params: unknown[],
    stored: SqlRow,
  ): Promise<Row> {
    const row = decodeRow(schema, stored);
    // With relations the insert runs in a transaction: the version follows them in it.
    const version = this.versionOf(schema.className, spec.objectId, spec.history, null, row);
    const inline = version && spec.relations.length === 0;
    try {
      await this.driver.run(sql, params, inline ? () => version : undefined);
    } catch (err) {
      throw this.translateWriteError(err);
    }
    if (spec.relations.length > 0) await this.applyRelations(schema, spec.objectId, spec.relations);
    if (version && !inline) await this.driver.run(version.sql, version.params);
    this.wrote(schema.className, spec.objectId, row);
    return row;
  }

  private translateWriteError(err: unknown): unknown {
    if (this.dialect.uniqueViolation(err)) {
      return new BdsError(
        ErrorCode.DUPLICATE_VALUE,
        'A duplicate value for a field with unique values was provided.',
      );
    }
    return err;
  }

  private async applyRelations(
    schema: ClassSchema,
    owningId: string,
    changes: RelationChange[],
  ): Promise<void> {
    for (const change of changes) {
      const table = joinTableName(schema.className, change.field);
      for (const relatedId of change.add) {
        const p = this.params();
        await this.driver.run(
          this.dialect.insertIgnore(table, ['owningId', 'relatedId'], [p.add(owningId), p.add(relatedId)]),
          p.values,
        );
      }
      if (change.remove.length) {
        const p = this.params();
        // Placeholders are positional: add the parameters in the order they appear in the text.
        const owner = p.add(owningId);
        const ids = change.remove.map((id) => p.add(id)).join(', ');
        await this.driver.run(
          `DELETE FROM ${this.q(table)} WHERE ${this.q('owningId')} = ${owner} AND ${this.q('relatedId')} IN (${ids})`,
          p.values,
        );
      }
    }
  }

  /** SET clauses for the field writes: every operation is an expression over the stored value. */
  private setClauses(writes: FieldWrite[], p: Params): string[] {
    const byField = new Map<string, string>();
    // Placeholders are positional: writes to one field are built together (their expressions nest),
    // so that parameters are added in the order the clauses appear in the text.
    const fieldOrder = [...new Set(writes.map((w) => w.field))];
    const grouped = fieldOrder.flatMap((field) => writes.filter((w) => w.field === field));
    for (const w of grouped) {
      const column = this.q(w.field);
      const current = byField.get(w.field) ?? column;
      let next: string;
      if (w.subPath.length > 0) {
        switch (w.kind) {
          case 'set':
            next = this.dialect.jsonSet(current, w.subPath, p.add(JSON.stringify(w.value)));
            break;
          case 'delete':
            next = this.dialect.jsonRemove(current, w.subPath);
            break;
          case 'increment':
            next = this.dialect.jsonSetNumber(
              current,
              w.subPath,
              // Operands read the stored column, never `current`: an expression with placeholders
              // must appear once in the text.
              `COALESCE(${(this.dialect.jsonNumber ?? this.dialect.jsonPath)(column, w.subPath)}, 0) + ${p.add(w.amount)}`,
            );
            break;
          default: {
            const path = w.subPath;
            const arr = this.dialect.jsonPathRaw(column, path);
            const values = p.add(JSON.stringify(w.values));
            const op =
              w.kind === 'add'
                ? this.dialect.arrayAppend(arr, values)
                : w.kind === 'addUnique'
                  ? this.dialect.arrayAddUnique(arr, values)
                  : this.dialect.arrayRemove(arr, values);
            next = this.dialect.jsonSet(current, path, op);
          }
        }
      } else {
        switch (w.kind) {
          case 'set':
            next = p.add(encodeColumn(this.dialect, w.type, w.value));
            break;
          case 'delete':
            next = 'NULL';
            break;
          case 'increment':
            next = `COALESCE(${current}, 0) + ${p.add(w.amount)}`;
            break;
          case 'add':
            next = this.dialect.arrayAppend(current, p.add(JSON.stringify(w.values)));
            break;
          case 'addUnique':
            next = this.dialect.arrayAddUnique(current, p.add(JSON.stringify(w.values)));
            break;
          case 'remove':
            next = this.dialect.arrayRemove(current, p.add(JSON.stringify(w.values)));
            break;
        }
      }
      byField.set(w.field, next);
    }
    return [...byField].map(([field, expr]) => `${this.q(field)} = ${expr}`);
  }

  async update(schema: ClassSchema, spec: UpdateSpec): Promise<{ before: Row; after: Row } | null> {
    const p = this.params();
    const sets = this.setClauses(spec.writes, p);
    if (spec.updatedAt !== null) sets.push(`${this.q('updatedAt')} = ${p.add(spec.updatedAt)}`);
    if (spec.acl !== undefined) {
      const { rperm, wperm } = encodeAcl(this.dialect, spec.acl);
      sets.push(`${this.q('_rperm')} = ${p.add(rperm)}`, `${this.q('_wperm')} = ${p.add(wperm)}`);
    }
    for (const [column, value] of Object.entries(spec.internal ?? {})) {
      checkColumnName(column);
      sets.push(`${this.q(column)} = ${p.add(value)}`);
    }
    // A write that sets nothing still answers the row (and checks the condition): touch the id.
    if (sets.length === 0) sets.push(`${this.q('objectId')} = ${this.q('objectId')}`);
    const t = this.table(schema.className);
    const conditions = [`${t}.${this.q('objectId')} = ${p.add(spec.objectId)}`];
    if (spec.condition) {
      conditions.push(
        `(${new WhereCompiler(this.dialect, p, () => undefined).compile(spec.condition, schema, t)})`,
      );
    }
    conditions.push(...this.expectations(spec.expectInternal, p));
    const update = {
      sql: `UPDATE ${t} SET ${sets.join(', ')} WHERE ${conditions.join(' AND ')} RETURNING *`,
      params: p.values,
    };
    const rp = this.params();
    const read = {
      sql: `SELECT * FROM ${t} WHERE ${this.q('objectId')} = ${rp.add(spec.objectId)}`,
      params: rp.values,
    };
    if (spec.relations.length === 0) return this.updateRow(schema, spec, read, update);
    return this.driver.transaction(() => this.updateRow(schema, spec, read, update));
  }

  private async updateRow(
    schema: ClassSchema,
    spec: UpdateSpec,
    read: { sql: string; params: unknown[] },
    update: { sql: string; params: unknown[] },
  ): Promise<{ before: Row; after: Row } | null> {
    let rows: { read: SqlRow[]; written: SqlRow[] };
    let decoded: { before: Row; after: Row } | undefined;
    const decode = (r: { read: SqlRow[]; written: SqlRow[] }) => {
      decoded ??= { before: decodeRow(schema, r.read[0]!), after: decodeRow(schema, r.written[0]!) };
      return decoded;
    };
    const stamp = spec.history;
    // The version is written with the update, in its unit; with relations, after them in the transaction.
    const inline = stamp && spec.relations.length === 0;
    const then = inline
      ? (r: { read: SqlRow[]; written: SqlRow[] }) => {
          if (r.written.length === 0) return undefined;
          const { before, after } = decode(r);
          return this.versionOf(schema.className, spec.objectId, stamp, before, after);
        }
      : undefined;
    try {
      rows = await this.driver.readThenWrite(read, update, then);
    } catch (err) {
      throw this.translateWriteError(err);
    }
    if (rows.written.length === 0) return null;
    if (spec.relations.length > 0) await this.applyRelations(schema, spec.objectId, spec.relations);
    const { before, after } = decode(rows);
    if (stamp && !inline) {
      const version = this.versionOf(schema.className, spec.objectId, stamp, before, after)!;
      await this.driver.run(version.sql, version.params);
    }
    this.wrote(schema.className, spec.objectId, after);
    return { before, after };
  }

  private expectations(expect: InternalValues | undefined, p: Params): string[] {
    return Object.entries(expect ?? {}).map(([column, value]) => {
      checkColumnName(column);
      return value === null ? `${this.q(column)} IS NULL` : `${this.q(column)} = ${p.add(value)}`;
    });
  }

  async delete(
    schema: ClassSchema,
    objectId: string,
    condition?: QueryNode,
    history?: VersionStamp,
  ): Promise<Row | null> {
    return this.driver.transaction(async () => {
      const p = this.params();
      const t = this.table(schema.className);
      const idCondition = `${t}.${this.q('objectId')} = ${p.add(objectId)}`;
      const extra = condition
        ? ` AND (${new WhereCompiler(this.dialect, p, () => undefined).compile(condition, schema, t)})`
        : '';
      const rows = await this.driver.runReturning(
        `DELETE FROM ${t} WHERE ${idCondition}${extra} RETURNING *`,
        p.values,
      );
      if (rows.length === 0) return null;
      for (const [name, def] of Object.entries(schema.fields)) {
        if (def.type !== 'Relation') continue;
        const jp = this.params();
        await this.driver.run(
          `DELETE FROM ${this.q(joinTableName(schema.className, name))} WHERE ${this.q('owningId')} = ${jp.add(objectId)}`,
          jp.values,
        );
      }
      const deleted = decodeRow(schema, rows[0]!);
      const version = this.versionOf(schema.className, objectId, history, deleted, null);
      if (version) await this.driver.run(version.sql, version.params);
      this.wrote(schema.className, objectId, null);
      return deleted;
    });
  }

  async purge(schema: ClassSchema): Promise<void> {
    this.vectors.drop(schema.className);
    this.rowCache?.forgetClass(schema.className);
    await this.driver.transaction(async () => {
      await this.driver.run(`DELETE FROM ${this.table(schema.className)}`, []);
      for (const [name, def] of Object.entries(schema.fields)) {
        if (def.type === 'Relation')
          await this.driver.run(`DELETE FROM ${this.q(joinTableName(schema.className, name))}`, []);
      }
    });
    this.rowCache?.forgetClass(schema.className);
  }
}
