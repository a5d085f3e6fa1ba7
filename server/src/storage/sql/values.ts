import type { Row, StoredAcl } from '../../kernel/records.ts';
import type { ClassSchema, FieldDef, FieldType } from '../../kernel/schema.ts';
import type { Dialect } from './dialect.ts';
import type { SqlRow } from './driver.ts';

/** Wire value -> bound column value, for a field of the given type. */
export function encodeColumn(dialect: Dialect, type: FieldType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'String':
    case 'Number':
      return value;
    case 'Boolean':
      return dialect.bool(Boolean(value));
    case 'Date':
      return typeof value === 'string' ? value : (value as { iso: string }).iso;
    case 'Pointer':
      return (value as { objectId: string }).objectId;
    case 'Bytes':
      return (value as { base64: string }).base64;
    case 'GeoPoint': {
      const p = value as { latitude: number; longitude: number };
      return JSON.stringify({ latitude: p.latitude, longitude: p.longitude });
    }
    case 'File': {
      return JSON.stringify({ name: (value as { name: string }).name });
    }
    case 'Polygon':
      return JSON.stringify((value as { coordinates: unknown }).coordinates);
    case 'Vector':
      return encodeVector(value as number[]);
    default:
      return JSON.stringify(value);
  }
}

/** A vector as stored: little-endian float32, 4 bytes per number. */
export function encodeVector(values: ArrayLike<number>): Buffer {
  const floats = Float32Array.from(values);
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
}

/** The float32 numbers of stored vector bytes, without a copy when they are 4-byte aligned. */
export function vectorView(bytes: Uint8Array): Float32Array {
  if (bytes.byteOffset % 4 === 0)
    return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
  return new Float32Array(new Uint8Array(bytes).buffer, 0, bytes.byteLength >> 2);
}

export function decodeVector(raw: Uint8Array): number[] {
  return Array.from(vectorView(raw));
}

/** Column value -> wire value; `undefined` means the field is absent. */
export function decodeColumn(field: FieldDef, raw: unknown): unknown {
  if (raw === null || raw === undefined) return undefined;
  switch (field.type) {
    case 'String':
    case 'Number':
      return raw;
    case 'Boolean':
      return raw === 1 || raw === true || raw === 1n;
    case 'Date':
      return { __type: 'Date', iso: raw };
    case 'Pointer':
      return { __type: 'Pointer', className: field.targetClass, objectId: raw };
    case 'Bytes':
      return { __type: 'Bytes', base64: raw };
    case 'GeoPoint':
      return { __type: 'GeoPoint', ...JSON.parse(raw as string) };
    case 'File':
      // Only the name is kept: the url is rebuilt from the public address when the row is read.
      return { __type: 'File', name: (JSON.parse(raw as string) as { name: string }).name };
    case 'Vector':
      return decodeVector(raw as Uint8Array);
    case 'Polygon':
      return { __type: 'Polygon', coordinates: JSON.parse(raw as string) };
    default:
      return typeof raw === 'string' ? JSON.parse(raw) : raw;
  }
}

export function encodeAcl(dialect: Dialect, acl: StoredAcl | null): { rperm: unknown; wperm: unknown } {
  if (!acl) return { rperm: null, wperm: null };
  const encode = (list: string[]) =>
    dialect.encodePrincipals ? dialect.encodePrincipals(list) : JSON.stringify(list);
  return { rperm: encode(acl.read), wperm: encode(acl.write) };
}

/** A stored principal list: JSON text, or an array where the engine has one (PostgreSQL's text[]). */
const principalList = (stored: unknown): string[] =>
  stored == null ? [] : Array.isArray(stored) ? stored : (JSON.parse(stored as string) as string[]);

export function decodeAcl(
  rperm: unknown,
  wperm: unknown,
): Record<string, { read?: true; write?: true }> | undefined {
  if (rperm == null && wperm == null) return undefined;
  const acl: Record<string, { read?: true; write?: true }> = {};
  for (const p of principalList(rperm)) acl[p] = { read: true };
  for (const p of principalList(wperm)) acl[p] = { ...acl[p], write: true };
  return acl;
}

/**
 * The fields a stored row is decoded by, in the schema's order (the built-in columns left out):
 * worked out once per schema object (a changed schema is a new object), not once per row.
 */
const COLUMNS = new WeakMap<ClassSchema, ReadonlyArray<readonly [string, FieldDef]>>();

function columnsOf(schema: ClassSchema): ReadonlyArray<readonly [string, FieldDef]> {
  let columns = COLUMNS.get(schema);
  if (!columns) {
    columns = Object.entries(schema.fields).filter(
      ([name]) => name !== 'objectId' && name !== 'createdAt' && name !== 'updatedAt' && name !== 'ACL',
    );
    COLUMNS.set(schema, columns);
  }
  return columns;
}

/** A stored row -> the wire object (all fields; projection happens above the store). */
export function decodeRow(schema: ClassSchema, raw: SqlRow): Row {
  const row: Row = { objectId: raw.objectId, createdAt: raw.createdAt, updatedAt: raw.updatedAt };
  for (const [name, def] of columnsOf(schema)) {
    if (def.type === 'Relation') {
      row[name] = { __type: 'Relation', className: def.targetClass };
      continue;
    }
    const value = decodeColumn(def, raw[name]);
    if (value !== undefined) row[name] = value;
  }
  const acl = decodeAcl(raw._rperm, raw._wperm);
  if (acl) row.ACL = acl;
  return row;
}
