import { isObject } from '@bds/client/protocol';
import { aclGrant } from '../kernel/acl.ts';
import type { Comparison, QueryNode, WireValue } from '../kernel/query.ts';
import type { WireAcl } from '../kernel/records.ts';
import type { ClassSchema, FieldDef } from '../kernel/schema.ts';
import { ELEMENT, ELEMENT_SCHEMA, type ElementCondition, elementCondition } from './elements.ts';
import {
  arrayEqualityOnly,
  checkArrayField,
  checkGeoPointField,
  checkPolygonField,
  checkRegexField,
  checkTextField,
  equalityOnly,
  type Key,
  keyOf,
  type ResolvedPath,
  relationMembership,
  resolvePath,
  stripGeoType,
} from './fields.ts';
import { distanceRadians, pointInBox, pointInPolygon } from './geo.ts';
import { regexTester } from './regex.ts';
import { textScore } from './text.ts';

/**
 * The in-memory matcher of the where AST: decides whether one row matches, with the semantics of
 * the SQL compiler (storage/sql/where.ts). `server/test/query-cases.ts` holds the cases both must
 * agree on (and would mark any where SQL is known to answer otherwise, with the reason). Pure: no
 * store, no I/O; a where is compiled once and the closure tests as many rows as needed.
 *
 * Rows are in wire form, as the REST API returns them: `createdAt`/`updatedAt` as ISO strings,
 * `{"__type":"Date","iso"}` dates, `{"__type":"Pointer",className,objectId}` pointers, and so on.
 */

export type WireRow = Readonly<Record<string, unknown>>;
export type RowMatcher = (row: WireRow) => boolean;

/**
 * Nodes whose answer depends on other rows ($inQuery, $notInQuery, $select, $dontSelect,
 * $relatedTo, and, given the schema, a compare or `$in` on a Relation field: what its join table
 * holds). They cannot be decided for one row in memory: the caller looks them up in the store
 * (with the same access rules as the query) and replaces each by an `in` node before compiling.
 */
export type UnresolvedNode = Extract<QueryNode, { type: 'inQuery' | 'select' | 'relatedTo' }>;
/** A compare or `$in` on a Relation field (see `relationMembership`). */
export type RelationNode = Extract<QueryNode, { type: 'compare' | 'in' }>;

/**
 * The nodes of a where that `compileMatcher` cannot decide alone (subqueries are not entered);
 * with `schema`, the conditions on its Relation fields too.
 */
export function unresolvedNodes(node: QueryNode): UnresolvedNode[];
export function unresolvedNodes(
  node: QueryNode,
  schema: ClassSchema | undefined,
): Array<UnresolvedNode | RelationNode>;
export function unresolvedNodes(node: QueryNode, schema?: ClassSchema): Array<UnresolvedNode | RelationNode> {
  switch (node.type) {
    case 'and':
    case 'or':
    case 'nor':
      return node.children.flatMap((child) => unresolvedNodes(child, schema));
    case 'inQuery':
    case 'select':
    case 'relatedTo':
      return [node];
    case 'compare':
    case 'in':
      return schema && relationMembership(schema, node) ? [node] : [];
    default:
      return [];
  }
}

/** The where with each unresolved node (as `unresolvedNodes` finds them) replaced by what `replace` answers for it. */
export function replaceNodes(
  node: QueryNode,
  replace: (node: UnresolvedNode | RelationNode) => QueryNode,
  schema?: ClassSchema,
): QueryNode {
  switch (node.type) {
    case 'and':
    case 'or':
    case 'nor':
      return {
        type: node.type,
        children: node.children.map((child) => replaceNodes(child, replace, schema)),
      };
    case 'inQuery':
    case 'select':
    case 'relatedTo':
      return replace(node);
    case 'compare':
    case 'in':
      return schema && relationMembership(schema, node) ? replace(node) : node;
    default:
      return node;
  }
}

/**
 * Compiles a where into a function of one row. Throws the 102 the SQL compiler throws for the
 * same where and schema (a relation compared, a sub-key of a String, $regex on a Number, ...), and
 * a plain Error when an unresolved node is left (see `unresolvedNodes`).
 */
export function compileMatcher(node: QueryNode, schema: ClassSchema): RowMatcher {
  const elements = elementCondition(schema, node);
  if (elements) return elementMatcher(elements);
  switch (node.type) {
    case 'and': {
      const children = node.children.map((child) => compileMatcher(child, schema));
      if (children.length === 1) return children[0]!;
      return (row) => children.every((child) => child(row));
    }
    case 'or': {
      const children = node.children.map((child) => compileMatcher(child, schema));
      return (row) => children.some((child) => child(row));
    }
    case 'nor': {
      const children = node.children.map((child) => compileMatcher(child, schema));
      return (row) => !children.some((child) => child(row));
    }
    case 'compare':
      return compare(resolvePath(schema, node.path), node.op, node.value);
    case 'in':
      return inList(resolvePath(schema, node.path), node.values, node.not);
    case 'all': {
      const resolvedAll = resolvePath(schema, node.path);
      checkArrayField(resolvedAll.def, node.path, '$all');
      const get = getter(resolvedAll);
      if (node.values.length === 0) return always;
      // A null in the list matches nothing, as `IN (NULL)` does.
      const wanted = node.values.map((v) => (v === null ? undefined : identity(keyOf(v))));
      return (row) => {
        const present = new Set(elementsOf(get(row)).map((e) => identity(keyOf(e))));
        return wanted.every((w) => w !== undefined && present.has(w));
      };
    }
    case 'containedBy': {
      const resolved = resolvePath(schema, node.path);
      checkArrayField(resolved.def, node.path, '$containedBy');
      if (resolved.missing) return always;
      const get = getter(resolved);
      // Null equals nothing: a null element is outside any list, a null in the list admits nothing.
      const allowed = new Set(node.values.map((v) => identity(keyOf(v))));
      allowed.delete(undefined);
      return (row) => elementsOf(get(row)).every((e) => allowed.has(identity(keyOf(e))));
    }
    case 'exists': {
      const get = getter(resolvePath(schema, node.path));
      return node.exists ? (row) => !absent(get(row)) : (row) => absent(get(row));
    }
    case 'regex': {
      const resolved = resolvePath(schema, node.path);
      checkRegexField(resolved.def, node.path);
      const get = getter(resolved);
      const test = regexTester(node.source, node.flags);
      return (row) => test(get(row));
    }
    case 'nearSphere': {
      const { point, maxDistance } = node;
      // Without a distance, $nearSphere only orders: every row with a value matches.
      if (maxDistance === undefined) {
        const get = geoGetter(resolvePath(schema, node.path), node.path);
        return get ? (row) => !absent(get(row)) : never;
      }
      return pointTest(
        schema,
        node.path,
        (lat, lng) => distanceRadians(lat, lng, point.latitude, point.longitude) <= maxDistance,
      );
    }
    case 'withinBox':
      return pointTest(schema, node.path, (lat, lng) => pointInBox(lat, lng, node.southwest, node.northeast));
    case 'withinPolygon': {
      const vertices = node.polygon.map((p) => [p.latitude, p.longitude]);
      return pointTest(schema, node.path, (lat, lng) => pointInPolygon(lat, lng, vertices));
    }
    case 'withinCenterSphere': {
      const { center, radius } = node;
      return pointTest(
        schema,
        node.path,
        (lat, lng) => distanceRadians(lat, lng, center.latitude, center.longitude) <= radius,
      );
    }
    case 'intersectsPoint': {
      const resolved = resolvePath(schema, node.path);
      if (resolved.missing) return never;
      checkPolygonField(resolved.def);
      const get = getter(resolved);
      const { point } = node;
      return (row) => {
        const polygon = get(row);
        return (
          isObject(polygon) &&
          Array.isArray(polygon.coordinates) &&
          pointInPolygon(point.latitude, point.longitude, polygon.coordinates as number[][])
        );
      };
    }
    case 'text': {
      const resolved = resolvePath(schema, node.path);
      checkTextField(resolved.def, node.path);
      const get = getter(resolved);
      const { search } = node;
      return (row) => textScore(get(row), search) > 0;
    }
    case 'acl': {
      const { access, principals } = node;
      return (row) => aclGrant(own(row, 'ACL') as WireAcl | undefined, principals, access) !== null;
    }
    case 'inQuery':
    case 'select':
    case 'relatedTo':
      throw new Error(
        `compileMatcher: ${describeUnresolved(node)} cannot be decided for one row in memory; ` +
          'replace it by an `in` list from a store lookup first (unresolvedNodes, replaceNodes).',
      );
  }
}

/** A condition on the elements of an Array field (a dot path into it; see elements.ts). */
function elementMatcher({ field, all, terms }: ElementCondition): RowMatcher {
  const tests = terms.map(({ none, test }) => {
    const inner = compileMatcher(test, ELEMENT_SCHEMA);
    const some = (row: WireRow) => elementsOf(own(row, field)).some((e) => inner({ [ELEMENT]: e }));
    return none ? (row: WireRow) => !some(row) : some;
  });
  return all ? (row) => tests.every((t) => t(row)) : (row) => tests.some((t) => t(row));
}

const always: RowMatcher = () => true;
const never: RowMatcher = () => false;

/** Null and undefined are the same for queries: the field is absent (a NULL column). */
const absent = (value: unknown): value is null | undefined => value === undefined || value === null;

function describeUnresolved(node: UnresolvedNode): string {
  switch (node.type) {
    case 'inQuery':
      return `${node.not ? '$notInQuery' : '$inQuery'} on ${node.path.join('.')}`;
    case 'select':
      return `${node.not ? '$dontSelect' : '$select'} on ${node.path.join('.')}`;
    case 'relatedTo':
      return `$relatedTo ${node.owner.className}.${node.key}`;
  }
}

type Getter = (row: WireRow) => unknown;

/** Reads the path's value from a row; keys below an Object field only walk through objects. */
function getter(resolved: ResolvedPath): Getter {
  if (resolved.missing) return () => undefined;
  const { field, keys } = resolved;
  if (keys.length === 0) return (row) => own(row, field);
  return (row) => {
    let value = own(row, field);
    for (const key of keys) value = own(value, key);
    return value;
  };
}

/** An own property only: a key such as `constructor` never reads the prototype. */
function own(container: unknown, key: string): unknown {
  return isObject(container) && Object.hasOwn(container, key) ? container[key] : undefined;
}

/** The getter of a geo operator's field, or undefined when the schema lacks it (nothing matches). */
function geoGetter(resolved: ResolvedPath, path: readonly string[]): Getter | undefined {
  checkGeoPointField(resolved.def, path);
  return resolved.missing ? undefined : getter(resolved);
}

/** A geo operator on a point: `test` gets the row's latitude and longitude; rows without a point never match. */
function pointTest(
  schema: ClassSchema,
  path: readonly string[],
  test: (lat: number, lng: number) => boolean,
): RowMatcher {
  const get = geoGetter(resolvePath(schema, path), path);
  if (!get) return never;
  return (row) => {
    const p = pointOf(get(row));
    return p !== undefined && test(p[0], p[1]);
  };
}

/** [latitude, longitude] of a stored point (a GeoPoint, or an object with both as numbers). */
function pointOf(value: unknown): [number, number] | undefined {
  if (!isObject(value) || typeof value.latitude !== 'number' || typeof value.longitude !== 'number') {
    return undefined;
  }
  return [value.latitude, value.longitude];
}

/** An array's elements; any other present value counts as one element (as SQL's json_each reads it). */
function elementsOf(value: unknown): readonly unknown[] {
  if (Array.isArray(value)) return value;
  return absent(value) ? [] : [value];
}

const sameKey = (a: Key | undefined, b: Key) => a !== undefined && a.kind === b.kind && a.value === b.value;

/** One string per distinct key, for set membership. */
const identity = (key: Key | undefined): string | undefined =>
  key === undefined ? undefined : `${key.kind}\u0000${String(key.value)}`;

/** Compares two keys of one kind; `undefined` when the kinds differ (no order between them). */
function order(a: Key, b: Key): number | undefined {
  if (a.kind !== b.kind) return undefined;
  if (typeof a.value === 'string') return compareCodePoints(a.value, b.value as string);
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}

/**
 * Orders strings by code point, which is the byte order of their UTF-8 form (how SQLite and
 * MongoDB compare text), not by UTF-16 unit: a character above U+FFFF sorts after U+E000..U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return unitRank(x) - unitRank(y);
  }
  return a.length - b.length;
}

/** Surrogates (U+D800..U+DFFF) stand for code points above U+FFFF: they rank after U+E000..U+FFFF. */
const unitRank = (unit: number) => (unit < 0xd800 ? unit : unit >= 0xe000 ? unit - 0x800 : unit + 0x2000);

const ACCEPT: Record<Exclude<Comparison, 'eq' | 'ne'>, (order: number) => boolean> = {
  lt: (o) => o < 0,
  lte: (o) => o <= 0,
  gt: (o) => o > 0,
  gte: (o) => o >= 0,
};

function compare(resolved: ResolvedPath, op: Comparison, value: WireValue): RowMatcher {
  const get = getter(resolved);
  const type = resolved.def?.type;
  if (type === 'Array') return compareArray(get, op, value);
  if (value === null) {
    if (op === 'eq') return (row) => absent(get(row));
    if (op === 'ne') return (row) => !absent(get(row));
    return never;
  }
  if (resolved.missing) return op === 'ne' ? always : never;
  if (type === 'GeoPoint' || type === 'Polygon' || type === 'Object') {
    if (op !== 'eq' && op !== 'ne') throw equalityOnly(type);
    const wanted = structuralKey(value);
    const equal = (row: WireRow) => {
      const stored = get(row);
      return !absent(stored) && structuralKey(stored) === wanted;
    };
    return op === 'eq' ? equal : (row) => !equal(row);
  }
  const dateField = type === 'Date';
  const wanted = keyOf(value, dateField);
  if (wanted === undefined) return op === 'ne' ? always : never;
  if (op === 'eq') return (row) => sameKey(keyOf(get(row), dateField), wanted);
  if (op === 'ne') return (row) => !sameKey(keyOf(get(row), dateField), wanted);
  const accept = ACCEPT[op];
  return (row) => {
    const key = keyOf(get(row), dateField);
    if (key === undefined) return false;
    const o = order(key, wanted);
    return o !== undefined && accept(o);
  };
}

/** GeoPoint, Polygon and Object fields equal a value when their JSON (coordinates only) is the same. */
const structuralKey = (value: unknown) => JSON.stringify(stripGeoType(value));

/**
 * Array fields: equality with an array compares the whole array; with anything else it means
 * "contains", and the ordering operators match when any element satisfies them.
 */
function compareArray(get: Getter, op: Comparison, value: WireValue): RowMatcher {
  if (Array.isArray(value)) {
    if (op !== 'eq' && op !== 'ne') throw arrayEqualityOnly();
    const wanted = JSON.stringify(value);
    const equal = (row: WireRow) => {
      const array = get(row);
      return Array.isArray(array) && JSON.stringify(array) === wanted;
    };
    return op === 'eq' ? equal : (row) => !equal(row);
  }
  if (value === null) {
    if (op === 'eq') return (row) => absent(get(row));
    if (op === 'ne') return (row) => !absent(get(row));
    return never;
  }
  const wanted = keyOf(value);
  if (wanted === undefined) return op === 'ne' ? always : never;
  const contains = (row: WireRow) => elementsOf(get(row)).some((e) => sameKey(keyOf(e), wanted));
  if (op === 'eq') return contains;
  if (op === 'ne') return (row) => !contains(row);
  const accept = ACCEPT[op];
  return (row) =>
    elementsOf(get(row)).some((e) => {
      const key = keyOf(e);
      const o = key === undefined ? undefined : order(key, wanted);
      return o !== undefined && accept(o);
    });
}

/**
 * `$in` / `$nin`. A null in the list matches a row without the value; `$nin` is exactly the rows
 * `$in` does not match, so it includes rows without the value unless the list holds null. On an
 * Array field, `$in` means "holds one of the values".
 */
function inList(resolved: ResolvedPath, values: readonly WireValue[], not: boolean): RowMatcher {
  const get = getter(resolved);
  const includesNull = values.includes(null);
  const { listed, held } = membershipKeys(resolved.def);
  const wanted = new Set(values.filter((v) => v !== null).map(listed));
  wanted.delete(undefined);
  const matches = (row: WireRow) => {
    const value = get(row);
    return absent(value) ? includesNull : held(value).some((k) => wanted.has(k));
  };
  return not ? (row) => !matches(row) : matches;
}

/**
 * How `$in` compares on a field of type `def` (`undefined`: a key below an Object): `listed` is the
 * key of one value of the list (`undefined`: it equals nothing), `held` the keys a stored value
 * holds (an Array field: one per element). A present value matches when it holds a listed key.
 * `$lookup` joins by these keys too (data/aggregate.ts), so it answers what `$in` answers.
 */
export function membershipKeys(def: FieldDef | undefined): {
  listed: (value: unknown) => string | undefined;
  held: (value: unknown) => string[];
} {
  const type = def?.type;
  if (type === 'Array') {
    return {
      listed: (value) => identity(keyOf(value)),
      held: (value) => definedIds(elementsOf(value).map((e) => identity(keyOf(e)))),
    };
  }
  if (type === 'GeoPoint' || type === 'Polygon' || type === 'Object') {
    return { listed: structuralKey, held: (value) => [structuralKey(value)] };
  }
  const dateField = type === 'Date';
  return {
    listed: (value) => identity(keyOf(value, dateField)),
    held: (value) => definedIds([identity(keyOf(value, dateField))]),
  };
}

const definedIds = (ids: Array<string | undefined>): string[] => ids.filter((id) => id !== undefined);
