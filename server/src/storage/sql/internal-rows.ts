import type { InternalRowStorage } from '../adapter.ts';
import { indexName, tableName } from './names.ts';
import { checkColumnName, SqlStorePart } from './store-part.ts';

/** Internal columns of the built-in classes (password hashes, one-time tokens): never read as fields. */
export class SqlInternalRows extends SqlStorePart implements InternalRowStorage {
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
}
