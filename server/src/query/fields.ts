import { isObject } from '@bds/client/protocol';
import { invalidQuery } from '../kernel/errors.ts';
import type { Path, QueryNode, WireValue } from '../kernel/query.ts';
import type { ClassSchema, FieldDef } from '../kernel/schema.ts';

/**
 * How a where path and a wire value are read against a class schema. Shared by the SQL compiler
 * (storage/sql/where.ts) and the in-memory matcher (match.ts), so both accept the same paths,
 * refuse the same ones with the same text, and treat a field the schema lacks the same way.
 */

/** The columns every class has, typed as the where language sees them. */
export const SYSTEM_COLUMNS: Readonly<Record<string, FieldDef>> = {
  objectId: { type: 'String' },
  createdAt: { type: 'Date' },
  updatedAt: { type: 'Date' },
};

/**
 * A field's definition as queries see it (system columns first). Own keys only: a field named
 * `toString` or `constructor` that the class lacks is missing, not a member of Object.prototype.
 */
export function queryFieldDef(schema: ClassSchema, field: string): FieldDef | undefined {
  if (Object.hasOwn(SYSTEM_COLUMNS, field)) return SYSTEM_COLUMNS[field];
  return Object.hasOwn(schema.fields, field) ? schema.fields[field] : undefined;
}

/** A where path resolved against the schema. */
export interface ResolvedPath {
  field: string;
  /** Keys below an Object field (`obj.a.b` -> `['a', 'b']`); empty for the field itself. */
  keys: readonly string[];
  /** The field's type; `undefined` below an Object field (whatever is stored there) or when missing. */
  def: FieldDef | undefined;
  /** The schema has no such field (or it is the ACL): the value is null on every row. */
  missing: boolean;
}

/** Resolves a path; a relation, or keys below a field that is not an Object, is a 102. */
export function resolvePath(schema: ClassSchema, path: Path): ResolvedPath {
  const [field, ...keys] = path as [string, ...string[]];
  const def = queryFieldDef(schema, field);
  if (!def || def.type === 'ACL') return { field, keys: [], def: undefined, missing: true };
  if (keys.length === 0) {
    if (def.type === 'Relation') {
      throw invalidQuery(`Invalid where: ${field} is a relation; query it with $relatedTo.`);
    }
    return { field, keys, def, missing: false };
  }
  if (def.type !== 'Object') {
    throw invalidQuery(
      `Invalid where: ${path.join('.')} reaches into a ${def.type} field; only Object fields have sub-keys.`,
    );
  }
  return { field, keys, def: undefined, missing: false };
}

/**
 * A condition on a Relation field by the pointers it holds, as the incumbent reads them:
 * `{rel: pointer}` and `$in` (rows whose relation holds one of them), `$ne` and `$nin` (rows whose
 * relation holds none of them). Pointers to another class than the relation's target hold nothing.
 */
export interface RelationMembership {
  field: string;
  targetClass: string;
  relatedIds: string[];
  not: boolean;
}

/** The membership a compare or `$in` node asks of a top-level Relation field; `undefined` for any other node. */
export function relationMembership(schema: ClassSchema, node: QueryNode): RelationMembership | undefined {
  if (node.type !== 'compare' && node.type !== 'in') return undefined;
  if (node.path.length !== 1) return undefined;
  const field = node.path[0]!;
  const def = Object.hasOwn(schema.fields, field) ? schema.fields[field] : undefined;
  if (def?.type !== 'Relation') return undefined;
  const targetClass = def.targetClass ?? '';
  let values: WireValue[];
  let not: boolean;
  if (node.type === 'in') {
    values = node.values;
    not = node.not;
  } else if (node.op === 'eq' || node.op === 'ne') {
    values = [node.value];
    not = node.op === 'ne';
  } else {
    throw invalidQuery(`Invalid where: ${field} is a relation; query it with $relatedTo.`);
  }
  const relatedIds = values
    .filter(
      (v): v is Record<string, unknown> =>
        isObject(v) && v.__type === 'Pointer' && v.className === targetClass,
    )
    .map((v) => String(v.objectId));
  return { field, targetClass, relatedIds, not };
}

/** `$inQuery` compares a Pointer (or an Array of pointers) with the rows of another class. */
export function checkInQueryField(resolved: ResolvedPath, path: Path): void {
  const type = resolved.def?.type;
  if (type !== 'Pointer' && type !== 'Array' && !resolved.missing) {
    throw invalidQuery(
      `Invalid where: $inQuery needs a Pointer field, ${path.join('.')} is ${type ?? 'an object key'}.`,
    );
  }
}

/** `$regex` reads strings: a typed field must be a String. */
export function checkRegexField(def: FieldDef | undefined, path: Path): void {
  if (def && def.type !== 'String') {
    throw invalidQuery(`Invalid where: $regex needs a String field, ${path.join('.')} is ${def.type}.`);
  }
}

/** `$text` reads strings: a typed field must be a String. */
export function checkTextField(def: FieldDef | undefined, path: Path): void {
  if (def && def.type !== 'String') {
    throw invalidQuery(`Invalid where: $text needs a String field, ${path.join('.')} is ${def.type}.`);
  }
}

/** `$all` and `$containedBy` read arrays: a typed field must be an Array (a key below an Object may hold one). */
export function checkArrayField(def: FieldDef | undefined, path: Path, op: '$all' | '$containedBy'): void {
  if (def && def.type !== 'Array') {
    throw invalidQuery(`Invalid where: ${op} needs an Array field, ${path.join('.')} is ${def.type}.`);
  }
}

/** `$nearSphere`, `$within` and `$geoWithin` read points: a typed field must be a GeoPoint. */
export function checkGeoPointField(def: FieldDef | undefined, path: Path): void {
  if (def && def.type !== 'GeoPoint') {
    throw invalidQuery(`Invalid where: geo queries need a GeoPoint field, ${path.join('.')} is ${def.type}.`);
  }
}

/** `$geoIntersects` reads a Polygon field (not a key below an Object). */
export function checkPolygonField(def: FieldDef | undefined): void {
  if (def?.type !== 'Polygon') throw invalidQuery(`Invalid where: $geoIntersects needs a Polygon field.`);
}

/** GeoPoint, Polygon and Object fields have no order. */
export const equalityOnly = (type: string) =>
  invalidQuery(`Invalid where: ${type} fields can only be compared for equality.`);

/** A whole array has no order. */
export const arrayEqualityOnly = () =>
  invalidQuery('Invalid where: arrays can only be compared for equality.');

/**
 * What a value compares as. Values of different kinds are never equal and have no order between
 * them: a string is never a number, a boolean is never 0 or 1, a date is never a string. Dates
 * compare by instant (milliseconds), pointers by objectId within one target class (a kind per
 * class), files by name, bytes by their base64, anything else structured by its JSON text.
 */
export interface Key {
  kind: string;
  value: string | number | boolean;
}

/** The kind of the pointers to one class. */
export const pointerKind = (className: string) => `Pointer<${className}>`;

/**
 * The key of a value, `undefined` for null and for a date that is not one. `dateField`: a string
 * compared with a Date field is read as a date.
 */
export function keyOf(value: unknown, dateField = false): Key | undefined {
  switch (typeof value) {
    case 'number':
      return { kind: 'Number', value };
    case 'boolean':
      return { kind: 'Boolean', value };
    case 'string':
      return dateField ? dateKey(value) : { kind: 'String', value };
    case 'undefined':
      return undefined;
  }
  if (value === null) return undefined;
  if (isObject(value)) {
    switch (value.__type) {
      case 'Date':
        return dateKey(value.iso);
      case 'Pointer':
        return { kind: pointerKind(String(value.className)), value: String(value.objectId) };
      case 'File':
        return { kind: 'File', value: String(value.name) };
      case 'Bytes':
        return { kind: 'Bytes', value: String(value.base64) };
    }
  }
  return { kind: 'JSON', value: JSON.stringify(value) };
}

function dateKey(iso: unknown): Key | undefined {
  const time = instantOf(iso);
  return time === undefined ? undefined : { kind: 'Date', value: time };
}

/** Milliseconds since the epoch of an ISO 8601 text; `undefined` for anything else. */
export function instantOf(iso: unknown): number | undefined {
  const time = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  return Number.isNaN(time) ? undefined : time;
}

/**
 * The one kind of every value a field of this type holds (as `keyOf` reads its wire form), or
 * `undefined` for the types compared otherwise: whole (GeoPoint, Polygon, Object) or by element (Array).
 */
export function fieldKind(def: FieldDef): string | undefined {
  switch (def.type) {
    case 'String':
    case 'Number':
    case 'Boolean':
    case 'Date':
    case 'File':
    case 'Bytes':
      return def.type;
    case 'Pointer':
      return pointerKind(def.targetClass ?? '');
    default:
      return undefined;
  }
}

/** GeoPoint and Polygon fields compare by their coordinates only (how the column stores them). */
export function stripGeoType(value: WireValue): unknown {
  if (isObject(value) && value.__type === 'GeoPoint')
    return { latitude: value.latitude, longitude: value.longitude };
  if (isObject(value) && value.__type === 'Polygon') return value.coordinates;
  return value;
}
