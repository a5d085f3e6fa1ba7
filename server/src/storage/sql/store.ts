import type { GroupStage, VectorSearch } from '../../kernel/aggregate.ts';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { QueryNode } from '../../kernel/query.ts';
import type { FieldWrite, RelationChange, Row } from '../../kernel/records.ts';
import type { ClassSchema, FieldDef } from '../../kernel/schema.ts';
import { compileMatcher } from '../../query/match.ts';
import type {
  FindSpec,
  HeldRole,
  InsertSpec,
  InternalValues,
  RelationMember,
  SchemaChange,
  SchemaLookup,
  StorageAdapter,
  StoredConfig,
  StoredFile,
  UpdateSpec,
} from '../adapter.ts';
import { SqlAggregates } from './aggregate.ts';
import { type GeoFieldType, Params } from './dialect.ts';
import type { SqlDriver, SqlRow } from './driver.ts';
import { SqlFileBlobs } from './files.ts';
import { indexName, joinTableName, sqlIdentifier, tableName } from './names.ts';
import { type CacheableDriver, RowCache } from './row-cache.ts';
import { decodeRow, encodeAcl, encodeColumn } from './values.ts';
import { VectorIndexes } from './vector-index.ts';
import { WhereCompiler } from './where.ts';

const SCHEMA_TABLE = '_SCHEMA';
const CONFIG_TABLE = '_GlobalConfig';
/**
 * Rows per class and read list (`_rperm` as stored; '' for rows without an ACL), kept by triggers
 * on every class table. A count of a whole class as a caller sums the lists the caller may read:
 * it reads one entry per distinct ACL, never every row's.
 */
const ACL_COUNT_TABLE = '_ACL_COUNT';
/** Shapes of reads by id whose SQL is kept; the map starts over when full. */
const BY_ID_SQL_CACHE_SIZE = 1_000;

/** The storage adapter for SQL engines: all SQL is built here, engine differences live in the dialect. */
export class SqlStore implements StorageAdapter {
  readonly kind: string;
  private readonly q: (identifier: string) => string;

  private readonly blobs: SqlFileBlobs;
  private readonly aggregates: SqlAggregates;

  /** Rows read by id, kept in memory (the embedded store only: see RowCache). */
  private readonly rowCache: RowCache | undefined;

  /** `rowCacheBytes`: memory for rows read by id, on a driver that can keep such a cache exact (0: none). */
  constructor(
    private readonly driver: SqlDriver,
    options: { rowCacheBytes?: number } = {},
  ) {
    this.kind = driver.dialect.name;
    const cacheable = driver as Partial<CacheableDriver>;
    if (options.rowCacheBytes && cacheable.hasUncommittedWrites && cacheable.changedElsewhere) {
      this.rowCache = new RowCache(driver as SqlDriver & CacheableDriver, options.rowCacheBytes);
    }
    this.q = driver.dialect.quote;
    this.blobs = new SqlFileBlobs(driver, (table, definition) => this.addColumn(table, definition));
    this.aggregates = new SqlAggregates(driver, this.vectors);
    // What a rolled-back write did to the vector indexes is unknown: they reload on the next search.
    driver.onRollback(async () => this.vectors.drop());
  }

  private readonly vectors = new VectorIndexes();

  /** Tells the vector indexes of a row written, once its transaction commits. */
  private wrote(className: string, objectId: string, row: Row | null): void {
    this.rowCache?.forget(className, objectId);
    // Outside a transaction afterCommit would run it at once: skip the closure.
    if (!this.driver.inTransaction()) this.vectors.changed(className, objectId, row);
    else this.driver.afterCommit(() => this.vectors.changed(className, objectId, row));
  }

  private get dialect() {
    return this.driver.dialect;
  }

  /** SQL of reads by id, per shape (see byIdShape). */
  private readonly byIdSql = new Map<string, string>();

  private params(): Params {
    return new Params(this.dialect.placeholder);
  }

  /** A class's table, quoted. */
  private table(className: string): string {
    return this.q(tableName(className));
  }

  async init(): Promise<void> {
    await this.driver.exec(
      `CREATE TABLE IF NOT EXISTS ${this.q(SCHEMA_TABLE)} (${this.q('className')} TEXT PRIMARY KEY NOT NULL, ${this.q('schema')} TEXT NOT NULL);` +
        `CREATE TABLE IF NOT EXISTS ${this.q(CONFIG_TABLE)} (${this.q('id')} INTEGER PRIMARY KEY NOT NULL, ${this.q('params')} TEXT NOT NULL, ${this.q('masterKeyOnly')} TEXT NOT NULL);` +
        `CREATE TABLE IF NOT EXISTS ${this.q(ACL_COUNT_TABLE)} (${this.q('class')} TEXT NOT NULL, ${this.q('rperm')} TEXT NOT NULL, ${this.q('n')} INTEGER NOT NULL, PRIMARY KEY (${this.q('class')}, ${this.q('rperm')}));`,
    );
  }

  /**
   * The native geometry columns of a class (made before the dialect kept them), its ACL count
   * triggers, and its counts recomputed from its rows (a class made before the counts existed);
   * a no-op for a class that has them. Part of the start-up migrations.
   */
  async upgradeClass(schema: ClassSchema): Promise<void> {
    await this.addMissingNativeGeo(schema);
    const table = tableName(schema.className);
    const p = this.params();
    const triggers = await this.driver.all(this.dialect.tableTriggers(p.add(table)), p.values);
    if (triggers.length >= 3) return;
    await this.driver.transaction(async () => {
      await this.driver.exec(this.dialect.aclCountTriggers(table, schema.className));
      const d = this.params();
      await this.driver.run(
        `DELETE FROM ${this.q(ACL_COUNT_TABLE)} WHERE ${this.q('class')} = ${d.add(schema.className)}`,
        d.values,
      );
      const i = this.params();
      const key = this.dialect.principalsKey?.(this.q('_rperm')) ?? `COALESCE(${this.q('_rperm')}, '')`;
      await this.driver.run(
        `INSERT INTO ${this.q(ACL_COUNT_TABLE)} (${this.q('class')}, ${this.q('rperm')}, ${this.q('n')}) ` +
          `SELECT ${i.add(schema.className)}, ${key}, COUNT(*) FROM ${this.q(table)} GROUP BY ${key}`,
        i.values,
      );
    });
  }

  /**
   * The native geometry columns of a class whose table was made before the dialect kept them (see
   * NativeGeo), and their indexes (PostGIS's too, when it was installed after the class was made,
   * or one dropped by hand); a no-op when it has them. Added under the schema lock, for the fields
   * the class has then (another instance may have changed it meanwhile).
   */
  private async addMissingNativeGeo(schema: ClassSchema): Promise<void> {
    const geo = this.dialect.nativeGeo;
    if (!geo || !Object.values(schema.fields).some((def) => geoFieldType(def))) return;
    const missingDdl = async (current: ClassSchema) => {
      const table = tableName(current.className);
      const names = async (query: (tableParam: string) => string) => {
        const p = this.params();
        return (await this.driver.all(query(p.add(table)), p.values)).map((r) => String(r.name));
      };
      const have = new Set([
        ...(await names((t) => this.dialect.tableColumns(t))),
        ...(await names(geo.tableIndexes)),
      ]);
      let ddl = '';
      for (const [name, def] of Object.entries(current.fields)) {
        const type = geoFieldType(def);
        if (!type) continue;
        const wanted = [geo.column(name, type), ...geo.indexes(current.className, name, type)];
        if (wanted.some((n) => !have.has(n))) ddl += geo.addColumn(current.className, name, type);
      }
      return ddl;
    };
    if (!(await missingDdl(schema))) return;
    await this.driver.transaction(async () => {
      await this.schemaLock();
      const current = this.dialect.schemaLock ? await this.lockedSchema(schema.className) : schema;
      const ddl = current && (await missingDdl(current));
      if (ddl) await this.driver.exec(ddl);
    });
  }

  /** DDL adding (or dropping) the dialect's native geometry beside a field; '' where it keeps none. */
  private nativeGeoDdl(className: string, name: string, def: FieldDef, change: 'add' | 'drop'): string {
    const geo = this.dialect.nativeGeo;
    const type = geoFieldType(def);
    if (!geo || !type) return '';
    return change === 'add' ? geo.addColumn(className, name, type) : geo.dropColumn(className, name, type);
  }

  tablesChangedElsewhere(): void {
    this.driver.tablesChanged?.();
  }

  async loadSchemas(): Promise<ClassSchema[]> {
    const rows = await this.driver.all(`SELECT ${this.q('schema')} FROM ${this.q(SCHEMA_TABLE)}`, []);
    return rows.map((r) => JSON.parse(r.schema as string) as ClassSchema);
  }

  private async saveSchema(schema: ClassSchema): Promise<void> {
    const p = this.params();
    const sql =
      `INSERT INTO ${this.q(SCHEMA_TABLE)} (${this.q('className')}, ${this.q('schema')}) VALUES (${p.add(schema.className)}, ${p.add(JSON.stringify(schema))}) ` +
      `ON CONFLICT (${this.q('className')}) DO UPDATE SET ${this.q('schema')} = excluded.${this.q('schema')}`;
    await this.driver.run(sql, p.values);
  }

  /** Takes the dialect's schema lock in the current transaction (several instances on one database). */
  private async schemaLock(): Promise<void> {
    const lock = this.dialect.schemaLock?.();
    if (lock) await this.driver.get(lock, []);
  }

  private addColumn(table: string, definition: string): string {
    return this.dialect.addColumn?.(table, definition) ?? `ALTER TABLE ${table} ADD COLUMN ${definition};`;
  }

  private columnDefinition(name: string, def: FieldDef): string {
    return `${this.q(name)} ${this.dialect.columnType(def.type)}`;
  }

  private joinTableDdl(className: string, field: string): string {
    const t = this.q(joinTableName(className, field));
    const related = this.q(sqlIdentifier(`_Join:${field}:${className}_related`));
    return (
      `CREATE TABLE IF NOT EXISTS ${t} (${this.q('owningId')} TEXT NOT NULL, ${this.q('relatedId')} TEXT NOT NULL, PRIMARY KEY (${this.q('owningId')}, ${this.q('relatedId')}));` +
      `CREATE INDEX IF NOT EXISTS ${related} ON ${t} (${this.q('relatedId')});`
    );
  }

  private indexDdl(className: string, name: string, keys: Record<string, 1 | -1>): string {
    const cols = Object.entries(keys)
      .map(([field, dir]) => `${this.q(field)} ${dir === -1 ? 'DESC' : 'ASC'}`)
      .join(', ');
    return `CREATE INDEX ${this.q(indexName(className, name))} ON ${this.table(className)} (${cols});`;
  }

  async createClass(schema: ClassSchema): Promise<void> {
    await this.driver.transaction(async () => {
      await this.schemaLock();
      // Another instance made the class meanwhile: this one's fields join it.
      const stored = await this.lockedSchema(schema.className);
      if (stored)
        return this.mergeSchema(stored, schema, {
          addFields: [],
          deleteFields: [],
          addIndexes: [],
          dropIndexes: [],
        });
      await this.driver.exec(this.createClassDdl(schema));
      await this.saveSchema(schema);
    });
  }

  private createClassDdl(schema: ClassSchema): string {
    const t = this.table(schema.className);
    const columns = [
      `${this.q('objectId')} TEXT PRIMARY KEY NOT NULL`,
      `${this.q('createdAt')} TEXT NOT NULL`,
      `${this.q('updatedAt')} TEXT NOT NULL`,
      `${this.q('_rperm')} ${this.dialect.principalsType ?? 'TEXT'}`,
      `${this.q('_wperm')} ${this.dialect.principalsType ?? 'TEXT'}`,
    ];
    let ddl = '';
    for (const [name, def] of Object.entries(schema.fields)) {
      if (name in SYSTEM_FIELD_NAMES) continue;
      if (def.type === 'Relation') ddl += this.joinTableDdl(schema.className, name);
      else {
        columns.push(this.columnDefinition(name, def));
        ddl += this.nativeGeoDdl(schema.className, name, def, 'add');
      }
    }
    ddl =
      `CREATE TABLE ${t} (${columns.join(', ')});` +
      this.dialect.aclCountTriggers(tableName(schema.className), schema.className) +
      `CREATE INDEX ${this.q(indexName(schema.className, 'createdAt'))} ON ${t} (${this.q('createdAt')});` +
      `CREATE INDEX ${this.q(indexName(schema.className, 'updatedAt'))} ON ${t} (${this.q('updatedAt')});` +
      ddl;
    for (const [name, keys] of Object.entries(schema.indexes))
      ddl += this.indexDdl(schema.className, name, keys);
    return ddl;
  }

  async changeSchema(schema: ClassSchema, change: SchemaChange): Promise<void> {
    this.vectors.drop(schema.className);
    this.rowCache?.forgetClass(schema.className);
    await this.driver.transaction(async () => {
      await this.schemaLock();
      const stored = await this.lockedSchema(schema.className);
      if (stored) return this.mergeSchema(stored, schema, change);
      const ddl = this.changeDdl(schema, change);
      if (ddl) await this.driver.exec(ddl);
      await this.saveSchema(schema);
    });
    // Again once the new shape is committed: a row read while the change waited for the lock
    // holds the old columns (a dropped field re-added must not come back with its old value).
    this.rowCache?.forgetClass(schema.className);
  }

  /**
   * The class as stored, read under the schema lock, where several instances share the database
   * (the dialect has a schema lock); undefined otherwise or when there is none.
   */
  private async lockedSchema(className: string): Promise<ClassSchema | undefined> {
    if (!this.dialect.schemaLock) return undefined;
    const p = this.params();
    const row = await this.driver.get(
      `SELECT ${this.q('schema')} FROM ${this.q(SCHEMA_TABLE)} WHERE ${this.q('className')} = ${p.add(className)}`,
      p.values,
    );
    return row ? (JSON.parse(row.schema as string) as ClassSchema) : undefined;
  }

  /**
   * A change planned from a schema that another instance has changed since: the change applies to
   * the stored class (the columns and indexes both add are made once), and the fields and indexes
   * the other instance added stay. `schema` becomes the class as saved (the caller keeps it).
   */
  private async mergeSchema(stored: ClassSchema, schema: ClassSchema, change: SchemaChange): Promise<void> {
    const deleted = new Set(change.deleteFields.map(([name]) => name));
    const dropped = new Set(change.dropIndexes);
    const addFields = [...change.addFields];
    for (const [name, def] of Object.entries(schema.fields))
      if (!(name in stored.fields) && !addFields.some(([n]) => n === name)) addFields.push([name, def]);
    const addIndexes = [...change.addIndexes];
    for (const [name, keys] of Object.entries(schema.indexes))
      if (!(name in stored.indexes) && !addIndexes.some(([n]) => n === name)) addIndexes.push([name, keys]);
    for (const [name, def] of Object.entries(stored.fields))
      if (!(name in schema.fields) && !deleted.has(name)) schema.fields[name] = def;
    for (const [name, keys] of Object.entries(stored.indexes))
      if (!(name in schema.indexes) && !dropped.has(name)) schema.indexes[name] = keys;
    const ddl = this.changeDdl(schema, {
      ...change,
      deleteFields: change.deleteFields.filter(([name]) => name in stored.fields),
      addFields: addFields.filter(([name]) => !(name in stored.fields)),
      addIndexes: addIndexes.filter(([name]) => !(name in stored.indexes)),
    });
    if (ddl) await this.driver.exec(ddl);
    await this.saveSchema(schema);
  }

  private changeDdl(schema: ClassSchema, change: SchemaChange): string {
    const t = this.table(schema.className);
    let ddl = '';
    for (const name of change.dropIndexes)
      ddl += `DROP INDEX IF EXISTS ${this.q(indexName(schema.className, name))};`;
    for (const [name, def] of change.deleteFields) {
      if (def.type === 'Relation')
        ddl += `DROP TABLE IF EXISTS ${this.q(joinTableName(schema.className, name))};`;
      else {
        // First: the engine refuses to drop a column that a generated column is computed from.
        ddl += this.nativeGeoDdl(schema.className, name, def, 'drop');
        ddl += `ALTER TABLE ${t} DROP COLUMN ${this.q(name)};`;
      }
    }
    for (const [name, def] of change.addFields) {
      if (def.type === 'Relation') ddl += this.joinTableDdl(schema.className, name);
      else {
        ddl += this.addColumn(t, this.columnDefinition(name, def));
        ddl += this.nativeGeoDdl(schema.className, name, def, 'add');
      }
    }
    for (const [name, keys] of change.addIndexes) ddl += this.indexDdl(schema.className, name, keys);
    return ddl;
  }

  async deleteClass(schema: ClassSchema): Promise<void> {
    this.vectors.drop(schema.className);
    this.rowCache?.forgetClass(schema.className);
    let ddl = `DROP TABLE IF EXISTS ${this.table(schema.className)};`;
    for (const [name, def] of Object.entries(schema.fields)) {
      if (def.type === 'Relation')
        ddl += `DROP TABLE IF EXISTS ${this.q(joinTableName(schema.className, name))};`;
    }
    await this.driver.transaction(async () => {
      await this.schemaLock();
      await this.driver.exec(ddl);
      for (const table of [SCHEMA_TABLE, ACL_COUNT_TABLE]) {
        const p = this.params();
        const column = table === SCHEMA_TABLE ? 'className' : 'class';
        await this.driver.run(
          `DELETE FROM ${this.q(table)} WHERE ${this.q(column)} = ${p.add(schema.className)}`,
          p.values,
        );
      }
    });
    this.rowCache?.forgetClass(schema.className);
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

  private async insertRow(
    schema: ClassSchema,
    spec: InsertSpec,
    sql: string,
    params: unknown[],
    stored: SqlRow,
  ): Promise<Row> {
    try {
      await this.driver.run(sql, params);
    } catch (err) {
      throw this.translateWriteError(err);
    }
    if (spec.relations.length > 0) await this.applyRelations(schema, spec.objectId, spec.relations);
    const row = decodeRow(schema, stored);
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
    try {
      rows = await this.driver.readThenWrite(read, update);
    } catch (err) {
      throw this.translateWriteError(err);
    }
    if (rows.written.length === 0) return null;
    if (spec.relations.length > 0) await this.applyRelations(schema, spec.objectId, spec.relations);
    const after = decodeRow(schema, rows.written[0]!);
    this.wrote(schema.className, spec.objectId, after);
    return { before: decodeRow(schema, rows.read[0]!), after };
  }

  private expectations(expect: InternalValues | undefined, p: Params): string[] {
    return Object.entries(expect ?? {}).map(([column, value]) => {
      checkColumnName(column);
      return value === null ? `${this.q(column)} IS NULL` : `${this.q(column)} = ${p.add(value)}`;
    });
  }

  async delete(schema: ClassSchema, objectId: string, condition?: QueryNode): Promise<Row | null> {
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
      this.wrote(schema.className, objectId, null);
      return decodeRow(schema, rows[0]!);
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

  private whereSql(schema: ClassSchema, where: QueryNode, lookup: SchemaLookup, p: Params) {
    const compiler = new WhereCompiler(this.dialect, p, lookup);
    const table = this.table(schema.className);
    return { compiler, where: compiler.compile(where, schema, table), table };
  }

  async find(schema: ClassSchema, spec: FindSpec, lookup: SchemaLookup): Promise<Row[]> {
    const byId = this.byIdShape(schema, spec);
    // Built-in classes (users, sessions...) have caches of their own and secrets in their rows. A
    // snapshot's reads may be older than the cache's rows, and must not be kept for later reads.
    const cache =
      byId &&
      this.rowCache &&
      !schema.className.startsWith('_') &&
      !this.driver.inTransaction() &&
      !this.driver.inSnapshot()
        ? this.rowCache
        : undefined;
    if (byId && cache) {
      const cached = cache.get(schema.className, byId.objectId);
      if (cached) {
        // The same condition the SQL would apply (the ACL among it), decided by the in-memory
        // matcher that agrees with the SQL compiler on every row (query-cases, access-property).
        const row = decodeRow(schema, cached);
        return compileMatcher(spec.where, schema)(row) ? [row] : [];
      }
    }
    if (byId) {
      const sql = this.byIdSql.get(byId.key);
      if (sql) {
        const ticket = cache?.ticket() ?? 0;
        const rows = await this.driver.all(sql, byId.values);
        if (cache && rows.length === 1) cache.add(ticket, schema.className, byId.objectId, rows[0]!);
        return rows.map((r) => decodeRow(schema, r));
      }
    }
    const p = this.params();
    const { compiler, where, table } = this.whereSql(schema, spec.where, lookup, p);
    const order = compiler.orderBy(schema, table, spec.order);
    if (order.length === 0) {
      const near = compiler.nearOrderSql();
      if (near) order.push(`${near} ASC`);
    }
    let sql = `SELECT * FROM ${table} WHERE ${where}`;
    if (order.length) sql += ` ORDER BY ${order.join(', ')}`;
    // Inlined, not bound: both are checked whole numbers, and a bound LIMIT costs SQLite several
    // microseconds per query (measured: 11 us against 4 us for a primary-key read).
    sql += ` LIMIT ${wholeNumber(spec.limit)} OFFSET ${wholeNumber(spec.skip)}`;
    // The SQL of a read by id is kept when its parameters are the ones byIdShape predicts.
    if (byId && byId.values.length === p.values.length && byId.values.every((v, i) => v === p.values[i])) {
      if (this.byIdSql.size >= BY_ID_SQL_CACHE_SIZE) this.byIdSql.clear();
      this.byIdSql.set(byId.key, sql);
    }
    const ticket = cache?.ticket() ?? 0;
    const rows = await this.driver.all(sql, p.values);
    if (byId && cache && rows.length === 1) cache.add(ticket, schema.className, byId.objectId, rows[0]!);
    return rows.map((r) => decodeRow(schema, r));
  }

  /**
   * A read of one row by id, alone or under a read or write ACL condition (GET /classes/C/id, the
   * write path's row reads): its SQL text depends only on the class, the access and how many
   * principals the caller has, so it is compiled once per such shape (compiling it costs more than
   * SQLite's own primary-key read). The parameters are built the way the dialect builds them.
   */
  private byIdShape(
    schema: ClassSchema,
    spec: FindSpec,
  ): { key: string; values: unknown[]; objectId: string } | undefined {
    if (spec.limit !== 1 || spec.skip !== 0 || spec.order.length !== 0) return undefined;
    let where = spec.where;
    let acl: Extract<QueryNode, { type: 'acl' }> | undefined;
    if (where.type === 'and' && where.children.length === 2 && where.children[1]!.type === 'acl') {
      acl = where.children[1] as Extract<QueryNode, { type: 'acl' }>;
      where = where.children[0]!;
    }
    if (where.type !== 'compare' || where.op !== 'eq' || typeof where.value !== 'string') return undefined;
    if (where.path.length !== 1 || where.path[0] !== 'objectId') return undefined;
    const values: unknown[] = [where.value];
    if (acl?.principals.length) {
      this.dialect.principalsContain('', acl.principals, (v) => {
        values.push(v);
        return '';
      });
    }
    const key = `${schema.className}\0${acl ? `${acl.access}\0${acl.principals.length}` : ''}`;
    return { key, values, objectId: where.value };
  }

  async count(schema: ClassSchema, spec: Pick<FindSpec, 'where'>, lookup: SchemaLookup): Promise<number> {
    const acl = onlyReadAcl(spec.where);
    if (acl) {
      // The whole class as a caller: the rows of each read list the caller may read, summed.
      const p = this.params();
      const compiler = new WhereCompiler(this.dialect, p, lookup);
      const sql =
        `SELECT COALESCE(SUM(${this.q('n')}), 0) AS n FROM ${this.q(ACL_COUNT_TABLE)} ` +
        `WHERE ${this.q('class')} = ${p.add(schema.className)} AND ${this.q('n')} > 0 AND ` +
        `(${this.q('rperm')} = '' OR ${compiler.aclMatch(this.q('rperm'), acl.principals)})`;
      return Number((await this.driver.get(sql, p.values))?.n ?? 0);
    }
    const p = this.params();
    const { where, table } = this.whereSql(schema, spec.where, lookup, p);
    const row = await this.driver.get(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`, p.values);
    return Number(row?.n ?? 0);
  }

  async estimateCount(schema: ClassSchema): Promise<number> {
    const row = await this.driver.get(this.dialect.estimatedRowCount(tableName(schema.className)), []);
    return Math.max(0, Number(row?.n ?? 0));
  }

  group(schema: ClassSchema, where: QueryNode, group: GroupStage, lookup: SchemaLookup): Promise<Row[]> {
    return this.aggregates.group(schema, where, group, lookup);
  }

  vectorSearch(schema: ClassSchema, search: VectorSearch, lookup: SchemaLookup) {
    return this.aggregates.vectorSearch(schema, search, lookup);
  }

  fileBegin(file: Omit<StoredFile, 'size' | 'etag'>): Promise<void> {
    return this.blobs.begin(file);
  }

  fileAppend(name: string, seq: number, bytes: Uint8Array): Promise<void> {
    return this.blobs.append(name, seq, bytes);
  }

  fileCommit(name: string, size: number, etag: string): Promise<void> {
    return this.blobs.commit(name, size, etag);
  }

  fileInfo(name: string): Promise<StoredFile | undefined> {
    return this.blobs.info(name);
  }

  fileChunk(name: string, seq: number): Promise<Uint8Array | undefined> {
    return this.blobs.chunk(name, seq);
  }

  fileDelete(name: string): Promise<boolean> {
    return this.blobs.delete(name);
  }

  fileList(after: string, limit: number): Promise<StoredFile[]> {
    return this.blobs.list(after, limit);
  }

  fileUpgrade(): Promise<void> {
    return this.blobs.upgrade();
  }

  async ensureInternalColumns(
    className: string,
    columns: string[],
    uniqueIndexes: Record<string, string[]>,
  ): Promise<void> {
    for (const c of [...columns, ...Object.values(uniqueIndexes).flat()]) checkColumnName(c);
    const p = this.params();
    const existing = await this.driver.all(this.dialect.tableColumns(p.add(tableName(className))), p.values);
    const have = new Set(existing.map((r) => String(r.name)));
    const t = this.table(className);
    let ddl = '';
    for (const c of columns) if (!have.has(c)) ddl += this.addColumn(t, `${this.q(c)} TEXT`);
    for (const [name, cols] of Object.entries(uniqueIndexes)) {
      ddl += `CREATE UNIQUE INDEX IF NOT EXISTS ${this.q(indexName(className, name))} ON ${t} (${cols.map(this.q).join(', ')});`;
    }
    if (ddl) await this.driver.transaction(() => this.driver.exec(ddl));
  }

  async findInternal(
    className: string,
    column: string,
    value: unknown,
    columns: string[],
  ): Promise<Array<Record<string, unknown>>> {
    for (const c of [column, ...columns]) checkColumnName(c);
    const p = this.params();
    const cols = ['objectId', ...columns].map(this.q).join(', ');
    return this.driver.all(
      `SELECT ${cols} FROM ${this.table(className)} WHERE ${this.q(column)} = ${p.add(value)}`,
      p.values,
    );
  }

  async findInternalByIds(
    className: string,
    objectIds: readonly string[],
    columns: string[],
  ): Promise<Array<Record<string, unknown>>> {
    if (objectIds.length === 0) return [];
    for (const c of columns) checkColumnName(c);
    const p = this.params();
    const cols = ['objectId', ...columns].map(this.q).join(', ');
    const ids = objectIds.map((id) => p.add(id)).join(', ');
    return this.driver.all(
      `SELECT ${cols} FROM ${this.table(className)} WHERE ${this.q('objectId')} IN (${ids})`,
      p.values,
    );
  }

  async rolesOf(userId: string): Promise<HeldRole[]> {
    const p = this.params();
    const users = this.q(joinTableName('_Role', 'users'));
    const roles = this.q(joinTableName('_Role', 'roles'));
    const [owning, related] = [this.q('owningId'), this.q('relatedId')];
    // held(id, via): the roles the user is a member of (via NULL), then every role whose `roles`
    // relation holds a held role (via that role). UNION drops rows already seen, so a cycle in the
    // graph still terminates.
    const sql =
      `WITH RECURSIVE held(id, via) AS (SELECT ${owning}, NULL FROM ${users} WHERE ${related} = ${p.add(userId)} ` +
      `UNION SELECT j.${owning}, held.id FROM ${roles} AS j JOIN held ON j.${related} = held.id) ` +
      `SELECT r.${this.q('name')} AS name, v.${this.q('name')} AS via FROM held ` +
      `JOIN ${this.table('_Role')} AS r ON r.${this.q('objectId')} = held.id ` +
      `LEFT JOIN ${this.table('_Role')} AS v ON v.${this.q('objectId')} = held.via ` +
      `WHERE r.${this.q('name')} IS NOT NULL`;
    const held = new Map<string, HeldRole>();
    for (const r of await this.driver.all(sql, p.values)) {
      const name = String(r.name);
      const via = r.via === null || r.via === undefined ? null : String(r.via);
      // A role reached on several paths is listed once; direct membership is the shortest chain.
      if (!held.has(name) || via === null) held.set(name, { name, via });
    }
    return [...held.values()];
  }

  async rolesContain(roleIds: string[], targetRoleId: string): Promise<boolean> {
    if (roleIds.length === 0) return false;
    if (roleIds.includes(targetRoleId)) return true;
    const p = this.params();
    const roles = this.q(joinTableName('_Role', 'roles'));
    const [owning, related] = [this.q('owningId'), this.q('relatedId')];
    const start = roleIds.map((id) => p.add(id)).join(', ');
    const sql =
      `WITH RECURSIVE below(id) AS (SELECT ${related} FROM ${roles} WHERE ${owning} IN (${start}) ` +
      `UNION SELECT j.${related} FROM ${roles} AS j JOIN below ON j.${owning} = below.id) ` +
      `SELECT 1 AS hit FROM below WHERE id = ${p.add(targetRoleId)} LIMIT 1`;
    return (await this.driver.get(sql, p.values)) !== undefined;
  }

  async ensureUniqueIndex(className: string, field: string): Promise<void> {
    const name = this.q(indexName(className, `${field}_unique`));
    await this.driver.exec(
      `CREATE UNIQUE INDEX IF NOT EXISTS ${name} ON ${this.table(className)} (${this.q(field)});`,
    );
  }

  async getConfig(): Promise<StoredConfig> {
    const row = await this.driver.get(
      `SELECT ${this.q('params')}, ${this.q('masterKeyOnly')} FROM ${this.q(CONFIG_TABLE)} WHERE ${this.q('id')} = 1`,
      [],
    );
    if (!row) return { params: {}, masterKeyOnly: {} };
    return {
      params: JSON.parse(row.params as string),
      masterKeyOnly: JSON.parse(row.masterKeyOnly as string),
    };
  }

  async setConfig(config: StoredConfig): Promise<void> {
    const p = this.params();
    await this.driver.run(
      `INSERT INTO ${this.q(CONFIG_TABLE)} (${this.q('id')}, ${this.q('params')}, ${this.q('masterKeyOnly')}) VALUES (1, ${p.add(JSON.stringify(config.params))}, ${p.add(JSON.stringify(config.masterKeyOnly))}) ` +
        `ON CONFLICT (${this.q('id')}) DO UPDATE SET ${this.q('params')} = excluded.${this.q('params')}, ${this.q('masterKeyOnly')} = excluded.${this.q('masterKeyOnly')}`,
      p.values,
    );
  }

  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.driver.transaction(fn);
  }

  snapshot<T>(fn: () => Promise<T>): Promise<T> {
    return this.driver.snapshot(fn);
  }

  afterCommit(fn: () => void): void {
    this.driver.afterCommit(fn);
  }

  inTransaction(): boolean {
    return this.driver.inTransaction();
  }

  onRollback(listener: () => Promise<void>): void {
    this.driver.onRollback(listener);
  }

  close(): Promise<void> {
    return this.driver.close();
  }

  async relationMembers(
    className: string,
    field: string,
    after: RelationMember | null,
    limit: number,
  ): Promise<RelationMember[]> {
    const p = this.params();
    const [owning, related] = [this.q('owningId'), this.q('relatedId')];
    let where = '';
    if (after) {
      // Placeholders are positional: added in the order they appear in the text.
      const a = p.add(after.owningId);
      const b = p.add(after.owningId);
      const c = p.add(after.relatedId);
      where = ` WHERE ${owning} > ${a} OR (${owning} = ${b} AND ${related} > ${c})`;
    }
    const rows = await this.driver.all(
      `SELECT ${owning}, ${related} FROM ${this.q(joinTableName(className, field))}${where} ` +
        `ORDER BY ${owning}, ${related} LIMIT ${wholeNumber(limit)}`,
      p.values,
    );
    return rows.map((r) => ({ owningId: String(r.owningId), relatedId: String(r.relatedId) }));
  }
}

const SYSTEM_FIELD_NAMES = { objectId: 1, createdAt: 1, updatedAt: 1, ACL: 1 };

/** The geo type of a field whose column may have native geometry beside it, else undefined. */
const geoFieldType = (def: FieldDef): GeoFieldType | undefined =>
  def.type === 'GeoPoint' || def.type === 'Polygon' ? def.type : undefined;

/** Internal column names are fixed by the service, never taken from a request; checked anyway. */
function checkColumnName(name: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`Invalid internal column name: ${name}`);
}

/** The `acl` read node when it is all a where asks (a whole class as a caller), else undefined. */
function onlyReadAcl(where: QueryNode): Extract<QueryNode, { type: 'acl' }> | undefined {
  if (where.type === 'acl') return where.access === 'read' ? where : undefined;
  if (where.type !== 'and') return undefined;
  const rest = where.children.filter((c) => !(c.type === 'and' && c.children.length === 0));
  return rest.length === 1 ? onlyReadAcl(rest[0]!) : undefined;
}

function wholeNumber(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`limit and skip must be whole numbers, got ${n}`);
  return n;
}
