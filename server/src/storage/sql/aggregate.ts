import type { GroupStage, Similarity, VectorSearch } from '../../kernel/aggregate.ts';
import { invalidQuery } from '../../kernel/errors.ts';
import type { Path, QueryNode } from '../../kernel/query.ts';
import type { Row } from '../../kernel/records.ts';
import type { ClassSchema, FieldDef } from '../../kernel/schema.ts';
import type { SchemaLookup } from '../adapter.ts';
import { Params } from './dialect.ts';
import type { SqlDriver } from './driver.ts';
import { tableName } from './names.ts';
import { decodeColumn, encodeVector, vectorView } from './values.ts';
import type { VectorIndexes } from './vector-index.ts';
import { WhereCompiler } from './where.ts';

const SQL_ACCUMULATORS = new Set(['sum', 'avg', 'min', 'max', 'count']);

/** Whether a `$group` stage compiles to one SQL GROUP BY (the others run streaming in data/). */
export function groupInSql(group: GroupStage): boolean {
  return group.accumulators.every(([, a]) => SQL_ACCUMULATORS.has(a.op));
}

/** Aggregation and vector search for the SQL stores: SQL built here, engine specifics in the dialect. */
export class SqlAggregates {
  constructor(
    private readonly driver: SqlDriver,
    private readonly indexes: VectorIndexes,
  ) {}

  private get dialect() {
    return this.driver.dialect;
  }

  async group(
    schema: ClassSchema,
    where: QueryNode,
    group: GroupStage,
    lookup: SchemaLookup,
  ): Promise<Row[]> {
    if (!groupInSql(group)) throw new Error('group stage needs streaming accumulators');
    const p = new Params(this.dialect.placeholder);
    const table = this.dialect.quote(tableName(schema.className));
    const compiler = new WhereCompiler(this.dialect, p, lookup);
    const value = (path: Path) => compiler.fieldValue(schema, table, path);
    const keys: Array<{ name: string; sql: string; def: FieldDef | undefined }> = [];
    if (group.key.kind === 'field') keys.push({ name: '', ...value(group.key.path) });
    if (group.key.kind === 'fields')
      for (const [name, path] of group.key.fields) keys.push({ name, ...value(path) });
    const select: string[] = keys.map((k, i) => `${k.sql} AS ${this.dialect.quote(`k${i}`)}`);
    const accs = group.accumulators.map(([name, acc], i) => {
      const alias = this.dialect.quote(`a${i}`);
      if (acc.op === 'count') return { name, op: acc.op, def: undefined, sql: `COUNT(*) AS ${alias}` };
      if ('constant' in acc.operand) {
        const n = Number(acc.operand.constant);
        const sql =
          acc.op === 'sum'
            ? `COUNT(*) * ${p.add(n)}`
            : acc.op === 'avg'
              ? `CASE WHEN COUNT(*) > 0 THEN ${p.add(n)} END`
              : p.add(acc.operand.constant);
        return { name, op: acc.op, def: undefined, sql: `${sql} AS ${alias}` };
      }
      const v = value(acc.operand.path);
      const fn = { sum: 'SUM', avg: 'AVG', min: 'MIN', max: 'MAX' }[acc.op as 'sum'];
      const sql = acc.op === 'sum' ? `COALESCE(SUM(${v.sql}), 0)` : `${fn}(${v.sql})`;
      return { name, op: acc.op, def: v.def, sql: `${sql} AS ${alias}` };
    });
    select.push(...accs.map((a) => a.sql));
    const condition = compiler.compile(where, schema, table);
    let sql = `SELECT ${select.join(', ')} FROM ${table} WHERE ${condition}`;
    if (keys.length) sql += ` GROUP BY ${keys.map((_, i) => this.dialect.quote(`k${i}`)).join(', ')}`;
    // An ungrouped aggregate answers one row even over no rows; a $group answers none then.
    else sql += ' HAVING COUNT(*) > 0';
    const rows = await this.driver.all(sql, p.values);
    return rows.map((r) => {
      const out: Row = {};
      if (group.key.kind === 'null') out.objectId = null;
      else if (group.key.kind === 'field') out.objectId = decoded(keys[0]!.def, r.k0);
      else out.objectId = Object.fromEntries(keys.map((k, i) => [k.name, decoded(k.def, r[`k${i}`])]));
      accs.forEach((a, i) => {
        const raw = r[`a${i}`];
        out[a.name] =
          a.op === 'min' || a.op === 'max' ? decoded(a.def, raw) : raw === null ? null : Number(raw);
      });
      return out;
    });
  }

  /**
   * Exact top-k: every row matching the filter is scored by the dialect's similarity expression and
   * the best `limit` ids are kept (the engine keeps a bounded sorter, never every row).
   */
  async vectorSearch(
    schema: ClassSchema,
    search: VectorSearch,
    lookup: SchemaLookup,
  ): Promise<Array<{ objectId: string; score: number }>> {
    const def = schema.fields[search.path];
    if (!def || (def.type !== 'Vector' && def.type !== 'Array')) {
      throw invalidQuery(
        `$vectorSearch: ${search.path} is not a Vector or Array field of ${schema.className}.`,
      );
    }
    if (def.type === 'Vector' && def.dimension)
      return this.indexedSearch(schema, search, def.dimension, lookup);
    const p = new Params(this.dialect.placeholder);
    const table = this.dialect.quote(tableName(schema.className));
    const column = `${table}.${this.dialect.quote(search.path)}`;
    const norm = Math.sqrt(search.vector.reduce((s, x) => s + Math.fround(x) * Math.fround(x), 0));
    const score = this.dialect.vectorScore(
      column,
      p.add(encodeVector(search.vector)),
      p.add(norm),
      p.add(SIMILARITY_CODE[search.similarity]),
    );
    const condition = new WhereCompiler(this.dialect, p, lookup).compile(search.filter, schema, table);
    const id = this.dialect.quote('objectId');
    const sql =
      `SELECT ${table}.${id} AS id, ${score} AS score FROM ${table} WHERE ${condition} AND ${column} IS NOT NULL ` +
      // A vector of another dimension scores NULL: last (PostgreSQL sorts NULLs first when descending).
      `ORDER BY score DESC NULLS LAST, ${table}.${id} ASC LIMIT ${Math.floor(search.limit)}`;
    const rows = await this.driver.all(sql, p.values);
    return rows
      .filter((r) => typeof r.score === 'number')
      .map((r) => ({ objectId: String(r.id), score: r.score as number }));
  }

  /** A `Vector` field: one pass over its in-memory index, limited to the rows the filter matches. */
  private async indexedSearch(
    schema: ClassSchema,
    search: VectorSearch,
    dimension: number,
    lookup: SchemaLookup,
  ): Promise<Array<{ objectId: string; score: number }>> {
    const q = (name: string) => this.dialect.quote(name);
    const table = q(tableName(schema.className));
    const index = await this.indexes.get(schema.className, search.path, dimension, async (add) => {
      let after = '';
      for (;;) {
        const p = new Params(this.dialect.placeholder);
        const rows = await this.driver.all(
          `SELECT ${q('objectId')} AS id, ${q(search.path)} AS v FROM ${table} WHERE ${q('objectId')} > ${p.add(after)} ` +
            `AND ${q(search.path)} IS NOT NULL ORDER BY ${q('objectId')} LIMIT ${LOAD_PAGE}`,
          p.values,
        );
        for (const r of rows) add(String(r.id), vectorView(r.v as Uint8Array));
        if (rows.length < LOAD_PAGE) return;
        after = String(rows.at(-1)!.id);
      }
    });
    let allowed: Set<string> | undefined;
    if (!(search.filter.type === 'and' && search.filter.children.length === 0)) {
      const p = new Params(this.dialect.placeholder);
      const condition = new WhereCompiler(this.dialect, p, lookup).compile(search.filter, schema, table);
      const rows = await this.driver.all(
        `SELECT ${table}.${q('objectId')} AS id FROM ${table} WHERE ${condition}`,
        p.values,
      );
      allowed = new Set(rows.map((r) => String(r.id)));
    }
    return index.search(search.vector, search.limit, search.similarity, allowed);
  }
}

/** Indexes are loaded from the store in pages of this many rows. */
const LOAD_PAGE = 5000;

export const SIMILARITY_CODE: Record<Similarity, number> = { cosine: 0, dotProduct: 1, euclidean: 2 };

function decoded(def: FieldDef | undefined, raw: unknown): unknown {
  if (raw === null || raw === undefined) return null;
  if (!def) return raw;
  return decodeColumn(def, raw) ?? null;
}
