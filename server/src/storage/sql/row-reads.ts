import type { QueryNode } from '../../kernel/query.ts';
import type { Row } from '../../kernel/records.ts';
import type { ClassSchema } from '../../kernel/schema.ts';
import { compileMatcher } from '../../query/match.ts';
import type { FindSpec, SchemaLookup } from '../adapter.ts';
import type { Params } from './dialect.ts';
import type { SqlDriver } from './driver.ts';
import { tableName } from './names.ts';
import { isCachedClass, type RowCache } from './row-cache.ts';
import { ACL_COUNT_TABLE, SqlStorePart, wholeNumber } from './store-part.ts';
import { decodeRow } from './values.ts';
import { WhereCompiler } from './where.ts';

/** Shapes of reads by id whose SQL is kept; the map starts over when full. */
const BY_ID_SQL_CACHE_SIZE = 1_000;

/** Reads and counts of a class's rows (aggregation and vector search: storage/sql/aggregate.ts). */
export class SqlRowReads extends SqlStorePart {
  /** `rowCache`: rows read by id, kept in memory (see RowCache). */
  constructor(
    driver: SqlDriver,
    private readonly rowCache: RowCache | undefined,
  ) {
    super(driver);
  }

  /** SQL of reads by id, per shape (see byIdShape). */
  private readonly byIdSql = new Map<string, string>();

  private whereSql(schema: ClassSchema, where: QueryNode, lookup: SchemaLookup, p: Params) {
    const compiler = new WhereCompiler(this.dialect, p, lookup);
    const table = this.table(schema.className);
    return { compiler, where: compiler.compile(where, schema, table), table };
  }

  async find(schema: ClassSchema, spec: FindSpec, lookup: SchemaLookup): Promise<Row[]> {
    const byId = this.byIdShape(schema, spec);
    // A snapshot's reads may be older than the cache's rows, and must not be kept for later reads.
    const cache =
      byId &&
      this.rowCache &&
      isCachedClass(schema.className) &&
      !this.driver.inTransaction() &&
      !this.driver.inSnapshot()
        ? this.rowCache
        : undefined;
    if (byId && cache) {
      let cached = cache.get(schema.className, byId.objectId);
      const fresh = cached && cache.catchUp();
      if (fresh) {
        // Another process writes the store too: its changes committed before now go first.
        await fresh;
        cached = cache.get(schema.className, byId.objectId);
      }
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
      const key = `${schema.className}\0${acl.principals.join('\0')}`;
      const cache =
        isCachedClass(schema.className) && !this.driver.inTransaction() && !this.driver.inSnapshot()
          ? this.rowCache
          : undefined;
      const kept = cache?.count(key);
      if (kept !== undefined) return kept;
      const ticket = cache?.ticket() ?? 0;
      const p = this.params();
      const compiler = new WhereCompiler(this.dialect, p, lookup);
      const sql =
        `SELECT COALESCE(SUM(${this.q('n')}), 0) AS n FROM ${this.q(ACL_COUNT_TABLE)} ` +
        `WHERE ${this.q('class')} = ${p.add(schema.className)} AND ${this.q('n')} > 0 AND ` +
        `(${this.q('rperm')} = '' OR ${compiler.aclMatch(this.q('rperm'), acl.principals)})`;
      const n = Number((await this.driver.get(sql, p.values))?.n ?? 0);
      cache?.keepCount(ticket, key, n);
      return n;
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
}

/** The `acl` read node when it is all a where asks (a whole class as a caller), else undefined. */
function onlyReadAcl(where: QueryNode): Extract<QueryNode, { type: 'acl' }> | undefined {
  if (where.type === 'acl') return where.access === 'read' ? where : undefined;
  if (where.type !== 'and') return undefined;
  const rest = where.children.filter((c) => !(c.type === 'and' && c.children.length === 0));
  return rest.length === 1 ? onlyReadAcl(rest[0]!) : undefined;
}
