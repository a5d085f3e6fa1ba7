import { invalidQuery } from '../../errors.ts';
import type { GeoPointValue, Path, QueryNode, SubQuery, WireValue } from '../../query/ast.ts';
import { type ClassSchema, type FieldDef, joinTableName } from '../../schema/types.ts';
import type { OrderKey, Principals, SchemaLookup } from '../adapter.ts';
import type { Dialect, Params } from './dialect.ts';

const SYSTEM_COLUMNS: Record<string, FieldDef> = {
  objectId: { type: 'String' },
  createdAt: { type: 'Date' },
  updatedAt: { type: 'Date' },
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isPointer = (v: unknown): v is { className: string; objectId: string } =>
  isObject(v) && v.__type === 'Pointer';
const isDate = (v: unknown): v is { iso: string } => isObject(v) && v.__type === 'Date';

const SQL_COMPARE = { eq: '=', ne: '<>', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;

/** A column reference resolved against the schema. */
interface Operand {
  /** SQL expression of the value (a column, or a JSON extraction for object sub-keys). */
  sql: string;
  /** The field's type, or `undefined` for a JSON sub-key whose type is whatever is stored. */
  def: FieldDef | undefined;
  /** True when the field is not in the schema: it is null on every row. */
  missing: boolean;
}

/**
 * Compiles the query AST to a SQL boolean expression for one dialect. Subqueries ($inQuery,
 * $select, ...) compile to SQL subqueries with the same read ACL applied to their class.
 */
export class WhereCompiler {
  private aliasCounter = 0;
  /** Set when the query uses $nearSphere: results are ordered by distance unless told otherwise. */
  private nearOrder: { sql: string; point: GeoPointValue } | undefined;
  /** > 0 while a subquery compiles: its $nearSphere filters but never orders the outer rows. */
  private subqueryLevel = 0;

  constructor(
    private readonly dialect: Dialect,
    private readonly params: Params,
    private readonly lookup: SchemaLookup,
    private readonly readers: Principals,
  ) {}

  compile(node: QueryNode, schema: ClassSchema, alias: string): string {
    const q = (s: string) => this.dialect.quote(s);
    switch (node.type) {
      case 'and':
        if (node.children.length === 0) return '1=1';
        return node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' AND ');
      case 'or':
        return node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' OR ');
      case 'nor':
        return `NOT (${node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' OR ')})`;
      case 'compare':
        return this.compare(this.operand(schema, alias, node.path), node.op, node.value);
      case 'in':
        return this.inList(this.operand(schema, alias, node.path), node.values, node.not);
      case 'all': {
        const op = this.operand(schema, alias, node.path);
        if (node.values.length === 0) return '1=1';
        return node.values.map((v) => this.arrayContains(op, [v])).join(' AND ');
      }
      case 'containedBy': {
        const op = this.operand(schema, alias, node.path);
        if (op.missing) return '1=1';
        const el = this.dialect.jsonElements(op.sql, this.nextAlias('e'));
        if (node.values.length === 0) return `NOT EXISTS (SELECT 1 FROM ${el.from})`;
        const { expr, list } = this.elementComparison(el, node.values);
        return `NOT EXISTS (SELECT 1 FROM ${el.from} WHERE ${expr} NOT IN (${list}))`;
      }
      case 'exists': {
        const op = this.operand(schema, alias, node.path);
        if (op.def?.type === 'Relation')
          throw invalidQuery(`Invalid where: $exists cannot test relation ${node.path[0]}.`);
        return node.exists ? `${op.sql} IS NOT NULL` : `${op.sql} IS NULL`;
      }
      case 'regex': {
        const op = this.operand(schema, alias, node.path);
        if (op.def && op.def.type !== 'String') {
          throw invalidQuery(
            `Invalid where: $regex needs a String field, ${node.path.join('.')} is ${op.def.type}.`,
          );
        }
        return this.dialect.regexMatch(op.sql, this.params.add(node.source), this.params.add(node.flags));
      }
      case 'inQuery':
        return this.inQuery(schema, alias, node.path, node.query, node.not);
      case 'select':
        return this.select(schema, alias, node.path, node.query, node.key, node.not);
      case 'relatedTo': {
        const owner = this.lookup(node.owner.className);
        const rel = owner?.fields[node.key];
        if (!owner || rel?.type !== 'Relation' || rel.targetClass !== schema.className) return '1=0';
        return `${alias}.${q('objectId')} IN (SELECT ${q('relatedId')} FROM ${q(joinTableName(owner.className, node.key))} WHERE ${q('owningId')} = ${this.params.add(node.owner.objectId)})`;
      }
      case 'nearSphere': {
        const op = this.geoOperand(schema, alias, node.path);
        if (op.missing) return '1=0';
        // The ORDER BY repeats the expression with its own parameters, added when the order is built.
        if (this.subqueryLevel === 0) this.nearOrder ??= { sql: op.sql, point: node.point };
        if (node.maxDistance === undefined) return `${op.sql} IS NOT NULL`;
        // Parameters are positional: add the point's only when the distance is in the text.
        const distance = this.dialect.geoDistance(
          op.sql,
          this.params.add(node.point.latitude),
          this.params.add(node.point.longitude),
        );
        return `${distance} <= ${this.params.add(node.maxDistance)}`;
      }
      case 'withinBox': {
        const op = this.geoOperand(schema, alias, node.path);
        if (op.missing) return '1=0';
        const lat = this.dialect.geoLatitude(op.sql);
        const lng = this.dialect.geoLongitude(op.sql);
        const { southwest: sw, northeast: ne } = node;
        const latSql = `${lat} BETWEEN ${this.params.add(sw.latitude)} AND ${this.params.add(ne.latitude)}`;
        const lngSql =
          sw.longitude <= ne.longitude
            ? `${lng} BETWEEN ${this.params.add(sw.longitude)} AND ${this.params.add(ne.longitude)}`
            : `(${lng} >= ${this.params.add(sw.longitude)} OR ${lng} <= ${this.params.add(ne.longitude)})`;
        return `${latSql} AND ${lngSql}`;
      }
      case 'withinPolygon': {
        const op = this.geoOperand(schema, alias, node.path);
        if (op.missing) return '1=0';
        const vertices = node.polygon.map((p) => [p.latitude, p.longitude]);
        return `${this.dialect.pointInPolygon(op.sql, this.params.add(JSON.stringify(vertices)))} = 1`;
      }
      case 'withinCenterSphere': {
        const op = this.geoOperand(schema, alias, node.path);
        if (op.missing) return '1=0';
        const d = this.dialect.geoDistance(
          op.sql,
          this.params.add(node.center.latitude),
          this.params.add(node.center.longitude),
        );
        return `${d} <= ${this.params.add(node.radius)}`;
      }
      case 'intersectsPoint': {
        const op = this.operand(schema, alias, node.path);
        if (op.missing) return '1=0';
        if (op.def?.type !== 'Polygon')
          throw invalidQuery(`Invalid where: $geoIntersects needs a Polygon field.`);
        return `${this.dialect.polygonContainsPoint(op.sql, this.params.add(node.point.latitude), this.params.add(node.point.longitude))} = 1`;
      }
    }
  }

  /** ORDER BY expression for $nearSphere, when the query has one. */
  nearOrderSql(): string | undefined {
    if (!this.nearOrder) return undefined;
    const { sql, point } = this.nearOrder;
    return this.dialect.geoDistance(sql, this.params.add(point.latitude), this.params.add(point.longitude));
  }

  /** The read-ACL condition for rows of a table alias. */
  aclCondition(alias: string, principals: Principals, column = '_rperm'): string {
    if (principals === null) return '1=1';
    const col = `${alias}.${this.dialect.quote(column)}`;
    const el = this.dialect.jsonElements(col, this.nextAlias('p'));
    const list = principals.map((p) => this.params.add(p)).join(', ');
    return `(${col} IS NULL OR EXISTS (SELECT 1 FROM ${el.from} WHERE ${el.scalar} IN (${list})))`;
  }

  orderBy(schema: ClassSchema, alias: string, order: OrderKey[]): string[] {
    const parts: string[] = [];
    for (const key of order) {
      const def = SYSTEM_COLUMNS[key.path[0]!] ?? schema.fields[key.path[0]!];
      if (!def || def.type === 'Relation' || def.type === 'ACL') continue;
      const op = this.operand(schema, alias, key.path);
      parts.push(`${op.sql} ${key.descending ? 'DESC' : 'ASC'}`);
    }
    return parts;
  }

  private nextAlias(prefix: string): string {
    this.aliasCounter += 1;
    return `${prefix}${this.aliasCounter}`;
  }

  private operand(schema: ClassSchema, alias: string, path: Path): Operand {
    const [field, ...keys] = path as [string, ...string[]];
    const def = SYSTEM_COLUMNS[field] ?? schema.fields[field];
    if (!def || def.type === 'ACL') return { sql: 'NULL', def: undefined, missing: true };
    const column = `${alias}.${this.dialect.quote(field)}`;
    if (keys.length === 0) {
      if (def.type === 'Relation') {
        throw invalidQuery(`Invalid where: ${field} is a relation; query it with $relatedTo.`);
      }
      return { sql: column, def, missing: false };
    }
    if (def.type !== 'Object') {
      throw invalidQuery(
        `Invalid where: ${path.join('.')} reaches into a ${def.type} field; only Object fields have sub-keys.`,
      );
    }
    return { sql: this.dialect.jsonPath(column, keys), def: undefined, missing: false };
  }

  private geoOperand(schema: ClassSchema, alias: string, path: Path): Operand {
    const op = this.operand(schema, alias, path);
    if (!op.missing && op.def && op.def.type !== 'GeoPoint') {
      throw invalidQuery(
        `Invalid where: geo queries need a GeoPoint field, ${path.join('.')} is ${op.def.type}.`,
      );
    }
    return op;
  }

  /** A query value -> the scalar it compares as in the column (or `undefined` if it can never match). */
  private scalar(op: Operand, value: WireValue): { sql: string } | undefined {
    const type = op.def?.type;
    if (type === 'Pointer') {
      if (!isPointer(value)) return undefined;
      if (op.def?.targetClass && value.className !== op.def.targetClass) return undefined;
      return { sql: this.params.add(value.objectId) };
    }
    if (isDate(value)) return { sql: this.params.add(value.iso) };
    if (type === 'Date' && typeof value === 'string') {
      const t = Date.parse(value);
      return Number.isNaN(t) ? undefined : { sql: this.params.add(new Date(t).toISOString()) };
    }
    if (typeof value === 'boolean') return { sql: this.params.add(this.dialect.bool(value)) };
    if (isPointer(value)) return { sql: this.params.add(value.objectId) };
    if (isObject(value) && value.__type === 'File') return { sql: this.params.add(value.name) };
    if (isObject(value) && value.__type === 'Bytes') return { sql: this.params.add(value.base64) };
    if (isObject(value) || Array.isArray(value))
      return { sql: this.dialect.jsonParam(this.params.add(JSON.stringify(value))) };
    return { sql: this.params.add(value) };
  }

  /** The SQL that a JSON sub-key value compares through: dates by iso, pointers by objectId. */
  private subKeySql(op: Operand, value: WireValue): string {
    // A File column holds {name, url}; Files compare by name.
    if (op.def?.type === 'File') return this.dialect.jsonPath(op.sql, ['name']);
    if (op.def !== undefined) return op.sql;
    if (isDate(value)) return this.dialect.jsonPath(op.sql, ['iso']);
    if (isPointer(value)) return this.dialect.jsonPath(op.sql, ['objectId']);
    return op.sql;
  }

  private compare(op: Operand, cmp: keyof typeof SQL_COMPARE, value: WireValue): string {
    if (op.def?.type === 'Array') return this.compareArray(op, cmp, value);
    if (value === null) {
      if (cmp === 'eq') return `${op.sql} IS NULL`;
      if (cmp === 'ne') return `${op.sql} IS NOT NULL`;
      return '1=0';
    }
    if (op.missing) return cmp === 'ne' ? '1=1' : '1=0';
    if (op.def?.type === 'GeoPoint' || op.def?.type === 'Polygon' || op.def?.type === 'Object') {
      const encoded = this.params.add(JSON.stringify(stripGeoType(value)));
      const stored = this.dialect.jsonParam(op.sql);
      const given = this.dialect.jsonParam(encoded);
      if (cmp === 'eq') return `${stored} = ${given}`;
      if (cmp === 'ne') return `(${op.sql} IS NULL OR ${stored} <> ${given})`;
      throw invalidQuery(`Invalid where: ${op.def.type} fields can only be compared for equality.`);
    }
    const s = this.scalar(op, value);
    if (!s) return cmp === 'ne' ? '1=1' : '1=0';
    const left = this.subKeySql(op, value);
    if (cmp === 'ne') return `(${left} IS NULL OR ${left} <> ${s.sql})`;
    return `${left} ${SQL_COMPARE[cmp]} ${s.sql}`;
  }

  private compareArray(op: Operand, cmp: keyof typeof SQL_COMPARE, value: WireValue): string {
    if (Array.isArray(value)) {
      const encoded = this.params.add(JSON.stringify(value));
      const given = this.dialect.jsonParam(encoded);
      if (cmp === 'eq') return `${op.sql} = ${given}`;
      if (cmp === 'ne') return `(${op.sql} IS NULL OR ${op.sql} <> ${given})`;
      throw invalidQuery('Invalid where: arrays can only be compared for equality.');
    }
    if (value === null)
      return cmp === 'eq' ? `${op.sql} IS NULL` : cmp === 'ne' ? `${op.sql} IS NOT NULL` : '1=0';
    if (cmp === 'eq') return this.arrayContains(op, [value]);
    if (cmp === 'ne') return `NOT ${this.arrayContains(op, [value])}`;
    // Ordering operators on an array match when any element satisfies them.
    const el = this.dialect.jsonElements(op.sql, this.nextAlias('e'));
    const { expr, list } = this.elementComparison(el, [value]);
    return `EXISTS (SELECT 1 FROM ${el.from} WHERE ${expr} ${SQL_COMPARE[cmp]} ${list})`;
  }

  /** How array elements compare with query values: pointers by objectId, dates by iso, others as stored. */
  private elementComparison(el: { scalar: string }, values: WireValue[]): { expr: string; list: string } {
    if (values.length > 0 && values.every(isPointer)) {
      return {
        expr: this.dialect.jsonPath(el.scalar, ['objectId']),
        list: values.map((v) => this.params.add((v as { objectId: string }).objectId)).join(', '),
      };
    }
    if (values.length > 0 && values.every(isDate)) {
      return {
        expr: this.dialect.jsonPath(el.scalar, ['iso']),
        list: values.map((v) => this.params.add((v as { iso: string }).iso)).join(', '),
      };
    }
    const list = values
      .map((v) => {
        if (typeof v === 'boolean') return this.params.add(this.dialect.bool(v));
        if (isObject(v) || Array.isArray(v)) return this.params.add(JSON.stringify(v));
        return this.params.add(v);
      })
      .join(', ');
    return { expr: el.scalar, list };
  }

  private arrayContains(op: Operand, values: WireValue[]): string {
    if (op.missing) return '1=0';
    const el = this.dialect.jsonElements(op.sql, this.nextAlias('e'));
    const { expr, list } = this.elementComparison(el, values);
    return `EXISTS (SELECT 1 FROM ${el.from} WHERE ${expr} IN (${list}))`;
  }

  private inList(op: Operand, values: WireValue[], not: boolean): string {
    if (op.def?.type === 'Array') {
      const nonNull = values.filter((v) => v !== null);
      const any = nonNull.length ? this.arrayContains(op, nonNull) : '1=0';
      return not ? `NOT ${any}` : any;
    }
    const includesNull = values.includes(null);
    const scalars = values
      .filter((v) => v !== null)
      .map((v) => this.scalar(op, v))
      .filter((s): s is { sql: string } => s !== undefined);
    const left = scalars.length
      ? this.subKeySql(
          op,
          values.find((v) => v !== null),
        )
      : op.sql;
    const parts: string[] = [];
    if (scalars.length && !op.missing) parts.push(`${left} IN (${scalars.map((s) => s.sql).join(', ')})`);
    if (includesNull) parts.push(`${op.sql} IS NULL`);
    const matches = parts.length ? `(${parts.join(' OR ')})` : '1=0';
    if (!not) return matches;
    if (op.missing) return includesNull ? '1=0' : '1=1';
    return `NOT ${matches}${includesNull ? '' : ` OR ${op.sql} IS NULL`}`;
  }

  private subquerySchema(query: SubQuery): ClassSchema | undefined {
    return this.lookup(query.className);
  }

  private inQuery(schema: ClassSchema, alias: string, path: Path, query: SubQuery, not: boolean): string {
    const op = this.operand(schema, alias, path);
    const inner = this.subquerySchema(query);
    if (op.def?.type !== 'Pointer' && op.def?.type !== 'Array' && !op.missing) {
      throw invalidQuery(
        `Invalid where: $inQuery needs a Pointer field, ${path.join('.')} is ${op.def?.type ?? 'an object key'}.`,
      );
    }
    if (!inner || op.missing || (op.def?.type === 'Pointer' && op.def.targetClass !== inner.className)) {
      return not ? '1=1' : '1=0';
    }
    const sub = this.subquery(inner, 'objectId', query.where);
    if (op.def?.type === 'Array') {
      const el = this.dialect.jsonElements(op.sql, this.nextAlias('e'));
      const any = `EXISTS (SELECT 1 FROM ${el.from} WHERE ${this.dialect.jsonPath(el.scalar, ['objectId'])} IN (${sub}))`;
      return not ? `NOT ${any}` : any;
    }
    return not ? `(${op.sql} IS NULL OR ${op.sql} NOT IN (${sub}))` : `${op.sql} IN (${sub})`;
  }

  private select(
    schema: ClassSchema,
    alias: string,
    path: Path,
    query: SubQuery,
    key: string,
    not: boolean,
  ): string {
    const op = this.operand(schema, alias, path);
    const inner = this.subquerySchema(query);
    if (!inner || op.missing) return not ? '1=1' : '1=0';
    const keyPath = key.split('.');
    const keyDef = SYSTEM_COLUMNS[keyPath[0]!] ?? inner.fields[keyPath[0]!];
    if (!keyDef || keyDef.type === 'Relation') return not ? '1=1' : '1=0';
    const sub = this.subquery(inner, keyPath, query.where);
    return not ? `(${op.sql} IS NULL OR ${op.sql} NOT IN (${sub}))` : `${op.sql} IN (${sub})`;
  }

  private subquery(inner: ClassSchema, key: string | string[], where: QueryNode): string {
    const a = this.nextAlias('s');
    const keyPath = typeof key === 'string' ? [key] : key;
    const selected = this.operand(inner, a, keyPath).sql;
    this.subqueryLevel++;
    let condition: string;
    try {
      condition = this.compile(where, inner, a);
    } finally {
      this.subqueryLevel--;
    }
    const acl = this.aclCondition(a, this.readers);
    // NULLs are left out: one NULL in the list would make `x NOT IN (...)` unknown for every row.
    return `SELECT ${selected} FROM ${this.dialect.quote(inner.className)} AS ${a} WHERE (${condition}) AND ${acl} AND ${selected} IS NOT NULL`;
  }
}

function stripGeoType(value: WireValue): unknown {
  if (isObject(value) && value.__type === 'GeoPoint')
    return { latitude: value.latitude, longitude: value.longitude };
  if (isObject(value) && value.__type === 'Polygon') return value.coordinates;
  return value;
}
