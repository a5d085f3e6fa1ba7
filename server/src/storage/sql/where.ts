import { invalidQuery } from '../../kernel/errors.ts';
import type {
  Comparison,
  GeoPointValue,
  Path,
  QueryNode,
  SubQuery,
  TextSearch,
  WireValue,
} from '../../kernel/query.ts';
import type { OrderKey } from '../../kernel/records.ts';
import type { ClassSchema, FieldDef } from '../../kernel/schema.ts';
import {
  arrayEqualityOnly,
  checkArrayField,
  checkGeoPointField,
  checkInQueryField,
  checkPolygonField,
  checkRegexField,
  checkTextField,
  equalityOnly,
  fieldKind,
  type Key,
  keyOf,
  pointerKind,
  queryFieldDef,
  type RelationMembership,
  relationMembership,
  resolvePath,
  stripGeoType,
} from '../../query/fields.ts';
import { TEXT_SCORE_KEY, textSpecJson } from '../../query/text.ts';
import type { SchemaLookup } from '../adapter.ts';
import {
  type Dialect,
  type GeoBox,
  type GeoFieldType,
  type JsonType,
  type NativeGeo,
  Params,
} from './dialect.ts';
import { joinTableName, tableName } from './names.ts';

const SQL_COMPARE = { eq: '=', ne: '<>', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;
type Ordering = Exclude<Comparison, 'eq' | 'ne'>;

const TRUE = '1=1';
const FALSE = '1=0';

/** A column reference resolved against the schema. */
interface Operand {
  field: string;
  /** The column with its table alias (`NULL` when missing). */
  column: string;
  /** Keys below an Object field (`obj.a.b` -> `['a', 'b']`); empty for the field itself. */
  keys: readonly string[];
  /** SQL of the value: the column, or what is at `keys` below it. */
  sql: string;
  /** The field's type, or `undefined` for a JSON sub-key whose type is whatever is stored. */
  def: FieldDef | undefined;
  /** True when the field is not in the schema: it is null on every row. */
  missing: boolean;
  /** Where the field's dates come from, for ordering them (see `ordered`). */
  dates: DateSource;
}

/** The service's createdAt/updatedAt, a column that leads an index (its table and name), or other. */
type DateSource = 'service' | { table: string; column: string } | 'other';

/**
 * A JSON value whose type is known only per row: a key below an Object field, or an element of an
 * array. Queries compare it with a value only when it holds a value of the same kind (see `keyOf`).
 */
interface JsonSlot {
  /** SQL of its JSON type; NULL when there is no value. */
  type: string;
  /** SQL of its value: a scalar, or the JSON text of an object or an array. */
  value: string;
  /** SQL of member `key` of the value when it is an object, else NULL (never an error). */
  member(key: string): string;
}

/** The ISO text of a Date key. */
const isoOf = (key: Key) => new Date(key.value as number).toISOString();

/** The target class of a pointer kind (`Pointer<Person>` -> `Person`). */
const pointerClass = (kind: string) => kind.slice('Pointer<'.length, -1);

/**
 * Compiles the query AST to a SQL boolean expression for one dialect. It knows nothing of callers:
 * access rules arrive as nodes of the AST (`acl`, pointer-permission conditions), also inside
 * subqueries ($inQuery, $select, ...), where the data layer puts them.
 *
 * Its answers are those of the in-memory matcher (query/match.ts): values compare only within one
 * kind (`keyOf`), so a typed column meets a value of another kind as a constant (and plain
 * `column op ?` otherwise, which an index serves), and a JSON sub-key or array element checks the
 * stored JSON type first. A condition may be NULL (unknown) on a row without the value; a
 * negation of one that may be is `IS NOT TRUE`, so unknown counts as false, as the matcher's
 * absent value does.
 * Parameters are positional: each is added exactly when its placeholder enters the text.
 */
export class WhereCompiler {
  private aliasCounter = 0;
  /** Set when the query uses $nearSphere: results are ordered by distance unless told otherwise. */
  private nearOrder: { latitude: string; longitude: string; point: GeoPointValue } | undefined;
  /** The first `$text` of the query (outside subqueries): what `order=$score` sorts by. */
  private textOrder: { value: string; search: TextSearch } | undefined;
  /** > 0 while a subquery compiles: its $nearSphere filters but never orders the outer rows. */
  private subqueryLevel = 0;

  constructor(
    private readonly dialect: Dialect,
    private readonly params: Params,
    private readonly lookup: SchemaLookup,
  ) {}

  compile(node: QueryNode, schema: ClassSchema, alias: string): string {
    const q = (s: string) => this.dialect.quote(s);
    switch (node.type) {
      case 'and':
        if (node.children.length === 0) return TRUE;
        return node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' AND ');
      case 'or':
        if (node.children.length === 0) return FALSE;
        return node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' OR ');
      case 'nor':
        if (node.children.length === 0) return TRUE;
        return `(${node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' OR ')}) IS NOT TRUE`;
      case 'compare':
      case 'in': {
        const membership = relationMembership(schema, node);
        if (membership) return this.relationHolds(schema, alias, membership);
        if (node.type === 'in')
          return this.inList(this.operand(schema, alias, node.path), node.values, node.not);
        return this.compare(this.operand(schema, alias, node.path), node.op, node.value);
      }
      case 'all': {
        const op = this.operand(schema, alias, node.path);
        checkArrayField(op.def, node.path, '$all');
        if (node.values.length === 0) return TRUE;
        const keys = node.values.map((v) => keyOf(v));
        // A null in the list matches nothing: no element equals it.
        if (keys.some((k) => k === undefined)) return FALSE;
        return keys.map((k) => this.someElement(op, (slot) => this.slotIn(slot, [k!]))).join(' AND ');
      }
      case 'containedBy': {
        const op = this.operand(schema, alias, node.path);
        checkArrayField(op.def, node.path, '$containedBy');
        // A null element is outside any list; a null in the list admits nothing.
        const keys = definedKeys(node.values.map((v) => keyOf(v)));
        return this.everyElement(op, (slot) => (keys.length ? this.slotIn(slot, keys) : FALSE));
      }
      case 'exists': {
        const op = this.operand(schema, alias, node.path);
        if (op.def?.type === 'Relation')
          throw invalidQuery(`Invalid where: $exists cannot test relation ${node.path[0]}.`);
        return node.exists ? `${op.sql} IS NOT NULL` : `${op.sql} IS NULL`;
      }
      case 'regex': {
        const op = this.operand(schema, alias, node.path);
        checkRegexField(op.def, node.path);
        if (op.missing) return FALSE;
        // Below an Object only a string is read: an object there would read as its JSON text.
        const guard = op.def ? '' : `${this.dialect.jsonTypeIn(this.pathSlot(op).type, ['string'])} AND `;
        return `${guard}${this.dialect.regexMatch(op.sql, this.params.add(node.source), this.params.add(node.flags))}`;
      }
      case 'inQuery':
        return this.inQuery(schema, alias, node.path, node.query, node.not);
      case 'select':
        return this.select(schema, alias, node.path, node.query, node.key, node.not);
      case 'relatedTo': {
        const owner = this.lookup(node.owner.className);
        const rel = owner?.fields[node.key];
        if (!owner || rel?.type !== 'Relation' || rel.targetClass !== schema.className) return FALSE;
        return `${alias}.${q('objectId')} IN (SELECT ${q('relatedId')} FROM ${q(joinTableName(owner.className, node.key))} WHERE ${q('owningId')} = ${this.params.add(node.owner.objectId)})`;
      }
      case 'nearSphere': {
        const point = this.geoPoint(schema, alias, node.path);
        if (!point) return FALSE;
        // The ORDER BY repeats the expression with its own parameters, added when the order is built.
        if (this.subqueryLevel === 0) this.nearOrder ??= { ...point, point: node.point };
        if (node.maxDistance === undefined) return `${point.sql} IS NOT NULL`;
        const prefilter = this.capPrefilter(point, node.point, node.maxDistance);
        const distance = this.dialect.geoDistance(
          point.latitude,
          point.longitude,
          this.params.add(node.point.latitude),
          this.params.add(node.point.longitude),
        );
        return `${prefilter}${distance} <= ${this.params.add(node.maxDistance)}`;
      }
      case 'withinBox': {
        const point = this.geoPoint(schema, alias, node.path);
        if (!point) return FALSE;
        const { latitude: lat, longitude: lng } = point;
        const { southwest: sw, northeast: ne } = node;
        const prefilter = this.pointPrefilter(point, withinBoxBoxes(sw, ne));
        const latSql = `${lat} BETWEEN ${this.params.add(sw.latitude)} AND ${this.params.add(ne.latitude)}`;
        const lngSql =
          sw.longitude <= ne.longitude
            ? `${lng} BETWEEN ${this.params.add(sw.longitude)} AND ${this.params.add(ne.longitude)}`
            : `(${lng} >= ${this.params.add(sw.longitude)} OR ${lng} <= ${this.params.add(ne.longitude)})`;
        return `${prefilter}${latSql} AND ${lngSql}`;
      }
      case 'withinPolygon': {
        const point = this.geoPoint(schema, alias, node.path);
        if (!point) return FALSE;
        const prefilter = this.pointPrefilter(point, [boundsOf(node.polygon)]);
        const vertices = node.polygon.map((p) => [p.latitude, p.longitude]);
        return `${prefilter}${this.dialect.pointInPolygon(point.latitude, point.longitude, this.params.add(JSON.stringify(vertices)))} = 1`;
      }
      case 'withinCenterSphere': {
        const point = this.geoPoint(schema, alias, node.path);
        if (!point) return FALSE;
        const prefilter = this.capPrefilter(point, node.center, node.radius);
        const d = this.dialect.geoDistance(
          point.latitude,
          point.longitude,
          this.params.add(node.center.latitude),
          this.params.add(node.center.longitude),
        );
        return `${prefilter}${d} <= ${this.params.add(node.radius)}`;
      }
      case 'acl':
        return this.acl(alias, node.access, node.principals);
      case 'text': {
        const op = this.operand(schema, alias, node.path);
        checkTextField(op.def, node.path);
        if (op.missing) return FALSE;
        // Below an Object only a string is read, as for $regex.
        const guard = op.def ? '' : `${this.dialect.jsonTypeIn(this.pathSlot(op).type, ['string'])} AND `;
        if (this.subqueryLevel === 0) this.textOrder ??= { value: op.sql, search: node.search };
        return `${guard}${this.dialect.textScore(op.sql, this.params.add(textSpecJson(node.search)))} > 0`;
      }
      case 'intersectsPoint': {
        const op = this.operand(schema, alias, node.path);
        if (op.missing) return FALSE;
        checkPolygonField(op.def);
        // Ray casting finds a point inside only within the polygon's bounding box (see boundsOf).
        const native = this.nativeGeo(op, alias, 'Polygon');
        const prefilter = native
          ? `${native.geo.polygonMeetsBox(native.column, boundsOf([node.point]), (v) => this.params.add(v))} AND `
          : '';
        return `${prefilter}${this.dialect.polygonContainsPoint(op.sql, this.params.add(node.point.latitude), this.params.add(node.point.longitude))} = 1`;
      }
    }
  }

  /** Rows whose relation holds one of the related ids (`not`: none of them), read from its join table. */
  private relationHolds(schema: ClassSchema, alias: string, m: RelationMembership): string {
    if (m.relatedIds.length === 0) return m.not ? TRUE : FALSE;
    const q = (s: string) => this.dialect.quote(s);
    const ids = m.relatedIds.map((id) => this.params.add(id)).join(', ');
    const owners = `SELECT ${q('owningId')} FROM ${q(joinTableName(schema.className, m.field))} WHERE ${q('relatedId')} IN (${ids})`;
    return `${alias}.${q('objectId')} ${m.not ? 'NOT IN' : 'IN'} (${owners})`;
  }

  /** ORDER BY expression for $nearSphere, when the query has one. */
  nearOrderSql(): string | undefined {
    if (!this.nearOrder) return undefined;
    const { latitude, longitude, point } = this.nearOrder;
    return this.dialect.geoDistance(
      latitude,
      longitude,
      this.params.add(point.latitude),
      this.params.add(point.longitude),
    );
  }

  /** Rows with no ACL, or whose ACL grants `access` to one of `principals` (the rule of kernel/acl.ts). */
  private acl(alias: string, access: 'read' | 'write', principals: readonly string[]): string {
    return this.aclMatch(
      `${alias}.${this.dialect.quote(access === 'read' ? '_rperm' : '_wperm')}`,
      principals,
    );
  }

  /** A stored principal list (a column, or the counts table's key) is absent, or names one of `principals`. */
  aclMatch(column: string, principals: readonly string[]): string {
    if (principals.length === 0) return `${column} IS NULL`;
    return `(${column} IS NULL OR ${this.dialect.principalsContain(column, principals, (v) => this.params.add(v))})`;
  }

  orderBy(schema: ClassSchema, alias: string, order: OrderKey[]): string[] {
    const parts: string[] = [];
    for (const key of order) {
      if (key.path[0] === TEXT_SCORE_KEY) {
        // The best match first, whichever way it is asked (as the incumbent sorts it); nothing
        // to sort by without a $text.
        if (this.textOrder) {
          const spec = this.params.add(textSpecJson(this.textOrder.search));
          parts.push(`${this.dialect.textScore(this.textOrder.value, spec)} DESC`);
        }
        continue;
      }
      const def = queryFieldDef(schema, key.path[0]!);
      if (!def || def.type === 'Relation' || def.type === 'ACL') continue;
      const op = this.operand(schema, alias, key.path);
      parts.push(`${op.sql} ${key.descending ? 'DESC' : 'ASC'}`);
    }
    return parts;
  }

  /** The SQL expression of a field path and the field's type (aggregation reads values with it). */
  valueOf(schema: ClassSchema, alias: string, path: Path): { sql: string; def: FieldDef | undefined } {
    const op = this.operand(schema, alias, path);
    return { sql: op.sql, def: op.def };
  }

  private nextAlias(prefix: string): string {
    this.aliasCounter += 1;
    return `${prefix}${this.aliasCounter}`;
  }

  private operand(schema: ClassSchema, alias: string, path: Path): Operand {
    const { field, keys, def, missing } = resolvePath(schema, path);
    if (missing) {
      return { field, column: 'NULL', keys: [], sql: 'NULL', def: undefined, missing: true, dates: 'other' };
    }
    const quoted = this.dialect.quote(field);
    const column = `${alias}.${quoted}`;
    const sql = keys.length === 0 ? column : this.dialect.jsonPath(column, keys);
    let dates: DateSource = 'other';
    if (field === 'createdAt' || field === 'updatedAt') dates = 'service';
    else if (
      keys.length === 0 &&
      Object.values(schema.indexes).some((index) => Object.keys(index)[0] === field)
    ) {
      dates = { table: this.dialect.quote(tableName(schema.className)), column: quoted };
    }
    return { field, column, keys, sql, def, missing: false, dates };
  }

  /**
   * The latitude and longitude a geo operator reads (NULL where there is no point), or none when
   * the field is missing: from the native point column of a top-level GeoPoint field where the
   * dialect keeps one, else from the JSON.
   */
  private geoPoint(schema: ClassSchema, alias: string, path: Path): GeoOperand | undefined {
    const op = this.operand(schema, alias, path);
    checkGeoPointField(op.def, path);
    if (op.missing) return undefined;
    const native = this.nativeGeo(op, alias, 'GeoPoint');
    if (native) return { ...native.geo.coordinates(native.column), sql: op.sql, native };
    const coordinate = (name: string) => {
      const keys = [...op.keys, name];
      const value = this.dialect.jsonPath(op.column, keys);
      // A GeoPoint column holds numbers; below an Object only a number is a coordinate.
      if (op.def) return value;
      return `CASE WHEN ${this.dialect.jsonTypeIn(this.dialect.jsonType(op.column, keys), ['number'])} THEN ${value} END`;
    };
    return { latitude: coordinate('latitude'), longitude: coordinate('longitude'), sql: op.sql };
  }

  /** The dialect's native column of a top-level field of `type` (none below an Object, or without native geometry). */
  private nativeGeo(op: Operand, alias: string, type: GeoFieldType): NativeColumn | undefined {
    const geo = this.dialect.nativeGeo;
    if (!geo || op.keys.length > 0 || op.def?.type !== type) return undefined;
    return { geo, column: `${alias}.${this.dialect.quote(geo.column(op.field, type))}` };
  }

  /**
   * An index-usable test, followed by ` AND `, that holds for every point in one of `boxes` (a
   * superset of the exact condition that follows it); '' on the JSON path or without boxes.
   */
  private pointPrefilter(point: GeoOperand, boxes: GeoBox[] | undefined): string {
    if (!point.native || !boxes) return '';
    return `${point.native.geo.pointInBoxes(point.native.column, boxes, (v) => this.params.add(v))} AND `;
  }

  /**
   * The prefilter of a spherical cap (`$centerSphere`, `$nearSphere` with `$maxDistance`): the
   * dialect's distance test on its sphere where it has one and capMeters proves it a superset,
   * else the boxes of capBoxes.
   */
  private capPrefilter(point: GeoOperand, center: GeoPointValue, radius: number): string {
    const sphere = point.native?.geo.sphere;
    const meters = sphere && capMeters(radius, sphere.radius);
    if (meters !== undefined) {
      return `${sphere!.pointWithin(point.native!.column, center, meters, (v) => this.params.add(v))} AND `;
    }
    return this.pointPrefilter(point, capBoxes(center, radius));
  }

  /** The value at a key below an Object field. */
  private pathSlot(op: Operand): JsonSlot {
    return {
      type: this.dialect.jsonType(op.column, op.keys),
      value: op.sql,
      member: (key) => this.dialect.jsonPath(op.column, [...op.keys, key]),
    };
  }

  /** An element listed by `jsonElements`. */
  private elementSlot(el: { scalar: string; json: string; type: string }): JsonSlot {
    const isObject = this.dialect.jsonTypeIn(el.type, ['object']);
    return {
      type: el.type,
      value: el.scalar,
      // Guarded: reading a member of a string element would be an error (not JSON).
      member: (key) => `CASE WHEN ${isObject} THEN ${this.dialect.jsonPath(el.json, [key])} END`,
    };
  }

  /** A key's value as bound: booleans as the dialect stores them, dates as their ISO text. */
  private bind(key: Key): string {
    if (key.kind === 'Boolean') return this.params.add(this.dialect.bool(key.value as boolean));
    if (key.kind === 'Date') return this.params.add(isoOf(key));
    return this.params.add(key.value);
  }

  /** What a typed column compares by: a File column by the name in its JSON, the others by the column. */
  private columnValue(op: Operand): string {
    return op.def?.type === 'File' ? this.dialect.jsonPath(op.column, ['name']) : op.sql;
  }

  /**
   * `expr cmp key`, where `expr` holds values of the key's kind. Dates are ISO text (canonical, as
   * the service writes them), which orders as the instants do for the years 0 to 9999. Other years
   * start with a sign and sort before every digit, '+' (after 9999) first, then '-' (before 0).
   * `dates` says where `expr` comes from: a createdAt or updatedAt column (the service sets them:
   * never such a year), a Date column that leads an index, or anything else.
   */
  private ordered(expr: string, cmp: Ordering, key: Key, dates: DateSource): string {
    const op = SQL_COMPARE[cmp];
    if (key.kind !== 'Date') return `${expr} ${op} ${this.bind(key)}`;
    const iso = isoOf(key);
    // Rare: an instant outside the years 0 to 9999 is compared as one, without an index.
    if (!/^\d/.test(iso)) return `${this.dialect.dateInstant(expr)} ${op} ${this.params.add(key.value)}`;
    if (dates === 'service') return `${expr} ${op} ${this.params.add(iso)}`;
    // Before a year 0..9999: one range, from '-' (years before 0 are all earlier) up.
    if (cmp === 'lt' || cmp === 'lte') return `(${expr} ${op} ${this.params.add(iso)} AND ${expr} >= '-')`;
    const after = `(${expr} ${op} ${this.params.add(iso)} OR ${expr} < '-')`;
    if (dates === 'other') return after;
    // After it: the years after 9999 sort first, so no one range of the index holds both. An OR of
    // two ranges would make SQLite walk the whole index for an ORDER BY on the column; instead the
    // range starts at the date unless the table holds a year after 9999 (one probe of the index),
    // and the test row by row keeps the answer exact (a count over a long range pays for it).
    const far = this.nextAlias('d');
    const holdsFar = `EXISTS (SELECT 1 FROM ${dates.table} AS ${far} WHERE ${far}.${dates.column} < '-')`;
    return `${expr} ${op} (CASE WHEN ${holdsFar} THEN '' ELSE ${this.params.add(iso)} END) AND ${after}`;
  }

  /** Where a slot holding a value of `kind` keeps what that kind compares by, and the test (no parameters) that it holds one. */
  private slotValue(slot: JsonSlot, kind: string): { guard: string; expr: string } {
    const isType = (types: readonly JsonType[]) => this.dialect.jsonTypeIn(slot.type, types);
    const tagged = (type: string) => `${slot.member('__type')} = '${type}'`;
    switch (kind) {
      case 'Number':
        return { guard: isType(['number']), expr: slot.value };
      case 'String':
        return { guard: isType(['string']), expr: slot.value };
      case 'Boolean':
        return { guard: isType(['boolean']), expr: slot.value };
      case 'JSON':
        return { guard: isType(['object', 'array']), expr: slot.value };
      case 'Date':
        return { guard: tagged('Date'), expr: slot.member('iso') };
      case 'File':
        return { guard: tagged('File'), expr: slot.member('name') };
      case 'Bytes':
        return { guard: tagged('Bytes'), expr: slot.member('base64') };
      default:
        return {
          guard: `${tagged('Pointer')} AND ${slot.member('className')} = ${textLiteral(pointerClass(kind))}`,
          expr: slot.member('objectId'),
        };
    }
  }

  /** The slot holds a value equal to one of `keys`. */
  private slotIn(slot: JsonSlot, keys: readonly Key[]): string {
    const byKind = new Map<string, Key[]>();
    for (const key of keys) byKind.set(key.kind, [...(byKind.get(key.kind) ?? []), key]);
    const parts = [...byKind].map(([kind, same]) => {
      const { guard, expr } = this.slotValue(slot, kind);
      const list = same.map((k) => this.bind(k));
      // The value first: it rules out most rows before the type is read.
      return `(${expr} ${list.length === 1 ? `= ${list[0]}` : `IN (${list.join(', ')})`} AND ${guard})`;
    });
    return parts.length === 0 ? FALSE : parts.join(' OR ');
  }

  /** The slot holds a value of the key's kind that orders `cmp` against it. */
  private slotOrder(slot: JsonSlot, cmp: Ordering, key: Key): string {
    const { guard, expr } = this.slotValue(slot, key.kind);
    // Objects that are dates, pointers, files or bytes are of their own kinds, not JSON.
    const plainJson =
      key.kind === 'JSON'
        ? ` AND COALESCE(${slot.member('__type')}, '') NOT IN ('Date', 'Pointer', 'File', 'Bytes')`
        : '';
    return `${this.ordered(expr, cmp, key, 'other')} AND ${guard}${plainJson}`;
  }

  /**
   * Some element of the operand's array satisfies `test`. Below an Object, an array there is
   * searched and any other value is an element by itself.
   */
  private someElement(op: Operand, test: (slot: JsonSlot) => string): string {
    if (op.missing) return FALSE;
    if (op.def?.type === 'Array') {
      const el = this.dialect.jsonElements(op.column, this.nextAlias('e'));
      return `EXISTS (SELECT 1 FROM ${el.from} WHERE ${test(this.elementSlot(el))})`;
    }
    const slot = this.pathSlot(op);
    const el = this.dialect.jsonElements(op.column, this.nextAlias('e'), op.keys);
    return (
      `CASE WHEN ${this.dialect.jsonTypeIn(slot.type, ['array'])} ` +
      `THEN EXISTS (SELECT 1 FROM ${el.from} WHERE ${test(this.elementSlot(el))}) ` +
      `ELSE (${test(slot)}) IS TRUE END`
    );
  }

  /** Every element of the operand's array satisfies `test` (true without an array); elements as in `someElement`. */
  private everyElement(op: Operand, test: (slot: JsonSlot) => string): string {
    if (op.missing) return TRUE;
    if (op.def?.type === 'Array') {
      const el = this.dialect.jsonElements(op.column, this.nextAlias('e'));
      return `NOT EXISTS (SELECT 1 FROM ${el.from} WHERE (${test(this.elementSlot(el))}) IS NOT TRUE)`;
    }
    const slot = this.pathSlot(op);
    const el = this.dialect.jsonElements(op.column, this.nextAlias('e'), op.keys);
    return (
      `CASE WHEN ${this.dialect.jsonTypeIn(slot.type, ['array'])} ` +
      `THEN NOT EXISTS (SELECT 1 FROM ${el.from} WHERE (${test(this.elementSlot(el))}) IS NOT TRUE) ` +
      `WHEN ${slot.value} IS NULL THEN ${TRUE} ` +
      `ELSE (${test(slot)}) IS TRUE END`
    );
  }

  private compare(op: Operand, cmp: Comparison, value: WireValue): string {
    const type = op.def?.type;
    if (type === 'Array') return this.compareArray(op, cmp, value);
    if (value === null) {
      if (cmp === 'eq') return `${op.sql} IS NULL`;
      if (cmp === 'ne') return `${op.sql} IS NOT NULL`;
      return FALSE;
    }
    if (op.missing) return cmp === 'ne' ? TRUE : FALSE;
    if (type === 'GeoPoint' || type === 'Polygon' || type === 'Object') {
      const encoded = this.params.add(JSON.stringify(stripGeoType(value)));
      const stored = this.dialect.jsonParam(op.sql);
      const given = this.dialect.jsonParam(encoded);
      if (cmp === 'eq') return `${stored} = ${given}`;
      if (cmp === 'ne') return `(${op.sql} IS NULL OR ${stored} <> ${given})`;
      throw equalityOnly(type);
    }
    const key = keyOf(value, type === 'Date');
    // A value of another kind (or a string that is no date, on a Date field) equals nothing.
    if (!key || (op.def && key.kind !== fieldKind(op.def))) return cmp === 'ne' ? TRUE : FALSE;
    if (!op.def) {
      const slot = this.pathSlot(op);
      if (cmp === 'eq') return this.slotIn(slot, [key]);
      if (cmp === 'ne') return `(${this.slotIn(slot, [key])}) IS NOT TRUE`;
      return this.slotOrder(slot, cmp, key);
    }
    const expr = this.columnValue(op);
    if (cmp === 'eq') return `${expr} = ${this.bind(key)}`;
    if (cmp === 'ne') return `(${op.sql} IS NULL OR ${expr} <> ${this.bind(key)})`;
    return this.ordered(expr, cmp, key, op.dates);
  }

  private compareArray(op: Operand, cmp: Comparison, value: WireValue): string {
    if (Array.isArray(value)) {
      const encoded = this.params.add(JSON.stringify(value));
      const given = this.dialect.jsonParam(encoded);
      if (cmp === 'eq') return `${op.sql} = ${given}`;
      if (cmp === 'ne') return `(${op.sql} IS NULL OR ${op.sql} <> ${given})`;
      throw arrayEqualityOnly();
    }
    if (value === null)
      return cmp === 'eq' ? `${op.sql} IS NULL` : cmp === 'ne' ? `${op.sql} IS NOT NULL` : FALSE;
    const key = keyOf(value);
    if (!key) return cmp === 'ne' ? TRUE : FALSE;
    if (cmp === 'eq') return this.someElement(op, (slot) => this.slotIn(slot, [key]));
    if (cmp === 'ne') return `NOT ${this.someElement(op, (slot) => this.slotIn(slot, [key]))}`;
    // Ordering operators on an array match when any element satisfies them.
    return this.someElement(op, (slot) => this.slotOrder(slot, cmp, key));
  }

  /** `$in` (`not`: `$nin`, exactly the rows `$in` leaves out). A null in the list matches rows without the value. */
  private inList(op: Operand, values: WireValue[], not: boolean): string {
    const includesNull = values.includes(null);
    const matches = op.missing
      ? includesNull
        ? TRUE
        : FALSE
      : this.anyOf(
          op,
          values.filter((v) => v !== null),
          includesNull,
        );
    if (!not) return matches;
    return matches === TRUE ? FALSE : matches === FALSE ? TRUE : `(${matches}) IS NOT TRUE`;
  }

  private anyOf(op: Operand, values: WireValue[], includesNull: boolean): string {
    const parts = includesNull ? [`${op.sql} IS NULL`] : [];
    const type = op.def?.type;
    if (type === 'Array') {
      const keys = definedKeys(values.map((v) => keyOf(v)));
      if (keys.length) parts.push(this.someElement(op, (slot) => this.slotIn(slot, keys)));
    } else if (type === 'GeoPoint' || type === 'Polygon' || type === 'Object') {
      const given = values.map((v) =>
        this.dialect.jsonParam(this.params.add(JSON.stringify(stripGeoType(v)))),
      );
      if (given.length) parts.push(`${this.dialect.jsonParam(op.sql)} IN (${given.join(', ')})`);
    } else if (!op.def) {
      const keys = definedKeys(values.map((v) => keyOf(v)));
      if (keys.length) parts.push(this.slotIn(this.pathSlot(op), keys));
    } else {
      const kind = fieldKind(op.def);
      const keys = definedKeys(values.map((v) => keyOf(v, type === 'Date'))).filter((k) => k.kind === kind);
      if (keys.length) parts.push(`${this.columnValue(op)} IN (${keys.map((k) => this.bind(k)).join(', ')})`);
    }
    if (parts.length === 0) return FALSE;
    return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`;
  }

  private subquerySchema(query: SubQuery): ClassSchema | undefined {
    return this.lookup(query.className);
  }

  private inQuery(schema: ClassSchema, alias: string, path: Path, query: SubQuery, not: boolean): string {
    const op = this.operand(schema, alias, path);
    const inner = this.subquerySchema(query);
    checkInQueryField(op, path);
    if (!inner) return not ? TRUE : FALSE;
    if (op.missing || (op.def?.type === 'Pointer' && op.def.targetClass !== inner.className)) {
      this.check(query.where, inner);
      return not ? TRUE : FALSE;
    }
    if (op.def?.type === 'Array') {
      // Elements that are pointers to the class.
      const el = this.dialect.jsonElements(op.column, this.nextAlias('e'));
      const { guard, expr } = this.slotValue(this.elementSlot(el), pointerKind(inner.className));
      const any = `EXISTS (SELECT 1 FROM ${el.from} WHERE ${guard} AND ${expr} IN (${this.objectIds(inner, query.where)}))`;
      return not ? `NOT ${any}` : any;
    }
    const sub = this.objectIds(inner, query.where);
    return not ? `(${op.sql} IS NULL OR ${op.sql} NOT IN (${sub}))` : `${op.sql} IN (${sub})`;
  }

  /**
   * Compiles a subquery's where that the SQL leaves out (its answer cannot matter), for its
   * refusals only: a where is refused or not whatever the rest of the query is.
   */
  private check(where: QueryNode, inner: ClassSchema): void {
    new WhereCompiler(this.dialect, new Params(this.dialect.placeholder), this.lookup).compile(
      where,
      inner,
      'x',
    );
  }

  /** The objectIds of the rows of `inner` that match `where`. */
  private objectIds(inner: ClassSchema, where: QueryNode): string {
    const a = this.nextAlias('s');
    return this.subquery(inner, a, where, [this.operand(inner, a, ['objectId']).sql]);
  }

  /**
   * `$select` / `$dontSelect`: the value is one of the values the subquery's rows hold at `key`, as
   * the matcher's `in` list of those values would decide (kinds included).
   */
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
    const keyPath = key.split('.');
    if (!inner) return not ? TRUE : FALSE;
    const keyDef = queryFieldDef(inner, keyPath[0]!);
    const matches =
      op.missing || !keyDef || keyDef.type === 'Relation'
        ? FALSE
        : this.selected(op, inner, keyPath, query.where);
    if (matches === FALSE) this.check(query.where, inner);
    if (!not) return matches;
    return matches === FALSE ? TRUE : `(${matches}) IS NOT TRUE`;
  }

  private selected(op: Operand, inner: ClassSchema, keyPath: string[], where: QueryNode): string {
    const a = this.nextAlias('s');
    const key = this.operand(inner, a, keyPath);
    const type = op.def?.type;
    const kind = op.def && fieldKind(op.def);
    if (kind) {
      const dateField = type === 'Date';
      if (key.def) {
        // Two typed columns: the common case, `column IN (SELECT column ...)` when they hold one kind.
        if (this.storedKind(key, dateField) !== kind) return FALSE;
        return `${this.columnValue(op)} IN (${this.subquery(inner, a, where, [this.columnValue(key)])})`;
      }
      const stored = this.storedKey(this.pathSlot(key), dateField);
      const sub = this.subquery(
        inner,
        a,
        where,
        [stored.value],
        () => `${stored.kind} = ${this.params.add(kind)}`,
      );
      return `${this.comparable(op, dateField)} IN (${sub})`;
    }
    if (type === 'GeoPoint' || type === 'Polygon' || type === 'Object') {
      // Compared whole, by JSON text with coordinates only: what these columns and Arrays hold.
      if (key.def && !WHOLE.has(key.def.type)) return FALSE;
      const slot = key.def ? undefined : this.pathSlot(key);
      const value = slot ? this.stripped(slot) : this.dialect.jsonParam(key.sql);
      const sub = this.subquery(inner, a, where, [value], () =>
        slot ? this.dialect.jsonTypeIn(slot.type, ['object', 'array']) : TRUE,
      );
      return `${this.dialect.jsonParam(op.sql)} IN (${sub})`;
    }
    // A key below an Object, or the elements of an Array: kinds known per row, compared as pairs.
    let pairs: string[];
    if (key.def) {
      const keyKind = this.storedKind(key, false);
      if (keyKind === undefined) return FALSE;
      pairs = [textLiteral(keyKind), this.comparable(key, false)];
    } else {
      const stored = this.storedKey(this.pathSlot(key), false);
      pairs = [stored.kind, stored.value];
    }
    const sub = this.subquery(inner, a, where, pairs);
    const pairIn = (slot: JsonSlot) => {
      const stored = this.storedKey(slot, false);
      return `(${stored.kind}, ${stored.value}) IN (${sub})`;
    };
    if (type === 'Array') {
      const el = this.dialect.jsonElements(op.column, this.nextAlias('e'));
      return `EXISTS (SELECT 1 FROM ${el.from} WHERE ${pairIn(this.elementSlot(el))})`;
    }
    return pairIn(this.pathSlot(op));
  }

  /**
   * The kind of the wire values of a typed column, as a field read with `dateField` sees them:
   * createdAt and updatedAt are ISO strings there (dates for a Date field); GeoPoint, Polygon,
   * Object and Array values are JSON.
   */
  private storedKind(op: Operand, dateField: boolean): string | undefined {
    if (op.field === 'createdAt' || op.field === 'updatedAt') return dateField ? 'Date' : 'String';
    if (op.def && WHOLE.has(op.def.type)) return 'JSON';
    return op.def && fieldKind(op.def);
  }

  /** What a typed column compares by when kinds are compared per row: dates by instant, JSON by its wire text. */
  private comparable(op: Operand, dateField: boolean): string {
    const value = this.comparableValue(op, dateField);
    return this.dialect.comparableText?.(value, op.def?.type) ?? value;
  }

  private comparableValue(op: Operand, dateField: boolean): string {
    const date =
      op.def?.type === 'Date' || (dateField && (op.field === 'createdAt' || op.field === 'updatedAt'));
    if (date) return this.dialect.dateInstant(op.sql);
    // The columns keep GeoPoints and Polygons without the `__type` their wire form begins with.
    if (op.def?.type === 'GeoPoint') return `'{"__type":"GeoPoint",' || substr(${op.sql}, 2)`;
    if (op.def?.type === 'Polygon') return `'{"__type":"Polygon","coordinates":' || ${op.sql} || '}'`;
    return this.columnValue(op);
  }

  /** The JSON text of a slot's value as a GeoPoint, Polygon or Object field compares it: coordinates only. */
  private stripped(slot: JsonSlot): string {
    // Each branch as the dialect compares JSON (SQLite's json(), PostgreSQL's text: its CASE needs one type).
    const json = this.dialect.jsonParam;
    return (
      `CASE ${slot.member('__type')} WHEN 'GeoPoint' THEN ${json(this.dialect.jsonRemove(slot.value, ['__type']))} ` +
      `WHEN 'Polygon' THEN ${json(slot.member('coordinates'))} ELSE ${json(slot.value)} END`
    );
  }

  /** The kind and the value (dates by instant) of what a slot holds, as SQL; both NULL without a value. */
  private storedKey(slot: JsonSlot, dateField: boolean): { kind: string; value: string } {
    const is = (types: readonly JsonType[]) => this.dialect.jsonTypeIn(slot.type, types);
    const tag = slot.member('__type');
    const tagged = `${is(['object'])} AND ${tag} IN ('Date', 'Pointer', 'File', 'Bytes')`;
    const kind =
      `CASE WHEN ${is(['number'])} THEN 'Number' WHEN ${is(['string'])} THEN '${dateField ? 'Date' : 'String'}' ` +
      `WHEN ${is(['boolean'])} THEN 'Boolean' ` +
      `WHEN ${tagged} THEN CASE ${tag} WHEN 'Pointer' THEN 'Pointer<' || ${slot.member('className')} || '>' ELSE ${tag} END ` +
      `WHEN ${is(['object', 'array'])} THEN 'JSON' END`;
    const value =
      `CASE WHEN ${is(['string'])} THEN ${dateField ? this.dialect.dateInstant(slot.value) : slot.value} ` +
      `WHEN ${tagged} THEN CASE ${tag} WHEN 'Date' THEN ${this.dialect.dateInstant(slot.member('iso'))} ` +
      `WHEN 'Pointer' THEN ${slot.member('objectId')} WHEN 'File' THEN ${slot.member('name')} ` +
      `ELSE ${slot.member('base64')} END ELSE ${slot.value} END`;
    return { kind, value };
  }

  /**
   * `SELECT columns FROM inner AS alias WHERE where`, without the rows where a column is NULL;
   * `filter` (built after `where`, for its parameters) narrows the rows further.
   */
  private subquery(
    inner: ClassSchema,
    alias: string,
    where: QueryNode,
    columns: string[],
    filter?: () => string,
  ): string {
    this.subqueryLevel++;
    let condition: string;
    try {
      condition = this.compile(where, inner, alias);
    } finally {
      this.subqueryLevel--;
    }
    const extra = filter ? ` AND ${filter()}` : '';
    // NULLs are left out: one NULL in the list would make `x NOT IN (...)` unknown for every row.
    const present = columns.map((c) => ` AND ${c} IS NOT NULL`).join('');
    return `SELECT ${columns.join(', ')} FROM ${this.dialect.quote(tableName(inner.className))} AS ${alias} WHERE (${condition})${extra}${present}`;
  }
}

/** The coordinates a geo operator reads, and the native point column they come from (if so). */
interface GeoOperand {
  latitude: string;
  longitude: string;
  /** SQL of the stored value (NULL where the row has none). */
  sql: string;
  native?: NativeColumn;
}

/** A native geometry column (quoted, with its table) and the dialect's SQL for it. */
interface NativeColumn {
  geo: NativeGeo;
  column: string;
}

/**
 * The boxes of the prefilters below: every point the exact condition of a geo operator accepts
 * lies in one of them. They are padded by GEO_PAD degrees on every side, far more than what the
 * exact tests round by (below 1e-12 degrees for coordinates within ±180, in their few operations
 * on numbers of that size) and far less than anything a query means (1e-9 degrees is about 0.1 mm).
 */
const GEO_PAD = 1e-9;

const padded = (box: GeoBox): GeoBox => ({
  south: box.south - GEO_PAD,
  west: box.west - GEO_PAD,
  north: box.north + GEO_PAD,
  east: box.east + GEO_PAD,
});

/** `$within: {$box}`: its box, or two beside the antimeridian when it crosses it (as pointInBox reads it). */
export function withinBoxBoxes(southwest: GeoPointValue, northeast: GeoPointValue): GeoBox[] {
  const [south, north] = [southwest.latitude, northeast.latitude];
  if (southwest.longitude <= northeast.longitude) {
    return [padded({ south, west: southwest.longitude, north, east: northeast.longitude })];
  }
  return [
    padded({ south, west: southwest.longitude, north, east: Infinity }),
    padded({ south, west: -Infinity, north, east: northeast.longitude }),
  ];
}

/**
 * The bounding box of polygon vertices (or of one point). A point on the boundary lies within it,
 * and ray casting (query/geo.ts) finds a point inside only within it: an edge it counts spans the
 * point's latitude, so min <= latitude < max;
 * east of every vertex no edge is counted, and west of every vertex each edge that spans the
 * latitude is, and a closed ring has an even number of them. Each edge's crossing is computed
 * within about 1e-13 degrees of the edge, which the padding covers.
 */
export function boundsOf(points: readonly GeoPointValue[]): GeoBox {
  const latitudes = points.map((p) => p.latitude);
  const longitudes = points.map((p) => p.longitude);
  return padded({
    south: Math.min(...latitudes),
    west: Math.min(...longitudes),
    north: Math.max(...latitudes),
    east: Math.max(...longitudes),
  });
}

/**
 * Boxes holding every point within `radius` radians of `center` (the spherical cap that
 * `$centerSphere` and `$nearSphere` with `$maxDistance` accept), or none when they would hold
 * everything. Latitudes lie within the radius of the center's; unless the cap reaches a pole,
 * longitudes lie within asin(sin r / cos latitude) of the center's, the meridian the cap touches,
 * taken again 360 degrees east and west for a cap across the antimeridian.
 */
export function capBoxes(center: GeoPointValue, radius: number): GeoBox[] | undefined {
  // Grown past the haversine's rounding (about 1e-15 radians below a quarter turn), and so past
  // what the exact test may accept.
  const r = radius + 1e-12 * (1 + radius);
  // A cap of a quarter turn or more would keep most of the sphere (and the haversine rounds
  // more as distances near a half turn): no prefilter.
  if (!(r < Math.PI / 2)) return undefined;
  const toDegrees = 180 / Math.PI;
  const south = center.latitude - r * toDegrees;
  const north = center.latitude + r * toDegrees;
  const everyLongitude = [padded({ south, west: -Infinity, north, east: Infinity })];
  if (south - GEO_PAD <= -90 || north + GEO_PAD >= 90) return everyLongitude;
  // cos(latitude) as the sine of the distance to the pole, exact in relative terms near the pole.
  const cosLatitude = Math.sin((90 - Math.abs(center.latitude)) / toDegrees);
  // Enlarged past the rounding of the division; asin grows with it.
  const sinHalfWidth = (Math.sin(r) / cosLatitude) * (1 + 1e-12);
  if (!(sinHalfWidth < 1)) return everyLongitude;
  const halfWidth = Math.asin(sinHalfWidth) * toDegrees;
  const boxes: GeoBox[] = [];
  for (const shift of [0, 360, -360]) {
    const west = center.longitude - halfWidth + shift;
    const east = center.longitude + halfWidth + shift;
    if (west <= 180 && east >= -180) boxes.push(padded({ south, west, north, east }));
  }
  return boxes;
}

/**
 * The distance in meters on a sphere of `sphereRadius` meters within which lies every point the
 * exact test (haversine distance <= `radius` radians) accepts, or none when it would be about a
 * half turn (nothing to filter) or the radius is no distance. The haversine of query/geo.ts (and
 * bds_distance) is exact to about 1e-15 radians except near a half turn, where its argument `a`
 * (in [0, 1], computed within about 2e-15 of its true value) meets 2 asin(sqrt a), whose slope
 * grows without bound near 1: an error d in `a` moves the distance by at most 2 asin(sqrt d), so
 * the computed distance falls short of the true one by less than 1e-7 radians, well below the
 * 1e-6 radians (about 6.4 m) added here. A distance test
 * on the sphere (PostGIS's st_dwithin with use_spheroid false: radius times the atan2 form of
 * Vincenty's formula, accurate to about 1e-15 radians everywhere, antipodes included) then holds
 * for every such point once the distance is also grown by 1e-9 relative, past the rounding of its
 * products and of the measured radius. Past a half turn less that margin, every point passes.
 */
export function capMeters(radius: number, sphereRadius: number): number | undefined {
  const r = radius + 1e-6;
  if (!(radius >= 0) || !(r < Math.PI)) return undefined;
  return r * sphereRadius * (1 + 1e-9);
}

/** The types whose columns hold a JSON value compared whole (GeoPoint and Polygon without `__type`). */
const WHOLE = new Set(['GeoPoint', 'Polygon', 'Object', 'Array']);

/** A SQL text literal (kinds name classes, whose names are letters, digits and `_`; quotes doubled anyway). */
const textLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;

const definedKeys = (keys: Array<Key | undefined>): Key[] => keys.filter((k): k is Key => k !== undefined);
