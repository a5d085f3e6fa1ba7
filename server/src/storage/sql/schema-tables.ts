import { type ClassSchema, type FieldDef, sameType, typeMismatch } from '../../kernel/schema.ts';
import type { SchemaChange, SchemaStorage } from '../adapter.ts';
import type { GeoFieldType } from './dialect.ts';
import type { SqlDriver } from './driver.ts';
import { indexName, joinTableName, sqlIdentifier, tableName } from './names.ts';
import type { RowCache } from './row-cache.ts';
import { ACL_COUNT_TABLE, CONFIG_TABLE, SCHEMA_TABLE, SqlStorePart } from './store-part.ts';
import type { VectorIndexes } from './vector-index.ts';

/**
 * The classes' tables and schema documents: DDL built here, engine differences in the dialect.
 * Several instances sharing one database change a class under the dialect's schema lock.
 */
export class SqlSchemaTables extends SqlStorePart implements SchemaStorage {
  /** The vector indexes and rows in memory are dropped when a class's shape changes. */
  constructor(
    driver: SqlDriver,
    private readonly vectors: VectorIndexes,
    private readonly rowCache: RowCache | undefined,
  ) {
    super(driver);
  }

  /** The store's own tables (schema documents, config, ACL counts), made when missing. */
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
    const rowChanges = this.dialect.rowChangeTrigger?.(table, schema.className);
    // A class made before the row caches' log (storage/postgres/row-changes.ts).
    if (rowChanges && !triggers.some((t) => t.name === rowChanges.name))
      await this.driver.exec(rowChanges.ddl);
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
      (this.dialect.rowChangeTrigger?.(tableName(schema.className), schema.className)?.ddl ?? '') +
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
    // A field the stored class already has keeps its type: a writer that planned another one from
    // an older view of the class (another instance, or a transaction not yet committed) is refused.
    for (const [name, def] of Object.entries(schema.fields)) {
      const known = stored.fields[name];
      if (known && !deleted.has(name) && !sameType(known, def))
        throw typeMismatch(schema.className, name, known, def);
    }
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

  async ensureUniqueIndex(className: string, field: string): Promise<void> {
    const name = this.q(indexName(className, `${field}_unique`));
    await this.driver.exec(
      `CREATE UNIQUE INDEX IF NOT EXISTS ${name} ON ${this.table(className)} (${this.q(field)});`,
    );
  }
}

const SYSTEM_FIELD_NAMES = { objectId: 1, createdAt: 1, updatedAt: 1, ACL: 1 };

/** The geo type of a field whose column may have native geometry beside it, else undefined. */
const geoFieldType = (def: FieldDef): GeoFieldType | undefined =>
  def.type === 'GeoPoint' || def.type === 'Polygon' ? def.type : undefined;
