/** Wire types of the service and helpers to read, show and parse values of each type. */

import type { FieldType } from '@bds/client/protocol';

export type { FieldType } from '@bds/client/protocol';
/** Types offered when adding a field (ACL is built in, never added). */
export { SCHEMA_FIELD_TYPES as FIELD_TYPES } from '@bds/client/protocol';

export interface FieldSpec {
  type: FieldType;
  targetClass?: string;
  /** Vector fields: the number of values. */
  dimension?: number;
  required?: boolean;
  defaultValue?: unknown;
}

export interface SchemaDoc {
  className: string;
  fields: Record<string, FieldSpec>;
  classLevelPermissions?: Record<string, unknown>;
  indexes?: Record<string, Record<string, number>>;
  /** Rows in the class: exact when `countExact`, else the service's cheap estimate (large classes). */
  count?: number | null;
  countExact?: boolean;
}

export type Row = Record<string, unknown> & { objectId: string };

export const SYSTEM_FIELDS = ['objectId', 'createdAt', 'updatedAt', 'ACL'] as const;
export const READ_ONLY_FIELDS = new Set(['objectId', 'createdAt', 'updatedAt']);

/**
 * Whether the console edits a field as a value (grid cell, row panel, bulk edit): not the
 * service's own fields, relations, files or bytes, nor a user's credentials (a password has its
 * own control).
 */
export function isEditableField(className: string, field: string, type: FieldType): boolean {
  return (
    !READ_ONLY_FIELDS.has(field) &&
    type !== 'Relation' &&
    type !== 'File' &&
    type !== 'Bytes' &&
    !isCredentialField(className, field)
  );
}

export const isSystemClass = (name: string): boolean => name.startsWith('_');

import { isCredentialField, isObject as isPlainObject, OBJECT_ID_PATTERN } from '@bds/client/protocol';

export { isPlainObject };

/** Columns in display order: objectId first, the class's fields, then the timestamps and ACL. */
export function columnsOf(schema: SchemaDoc): string[] {
  const names = Object.keys(schema.fields);
  const rest = names.filter((n) => !(SYSTEM_FIELDS as readonly string[]).includes(n));
  const out = ['objectId', ...rest, 'createdAt', 'updatedAt'];
  if (names.includes('ACL')) out.push('ACL');
  return out;
}

export function typeOf(schema: SchemaDoc | undefined, field: string): FieldType {
  if (field === 'createdAt' || field === 'updatedAt') return 'Date';
  if (field === 'objectId') return 'String';
  if (field === 'ACL') return 'ACL';
  return schema?.fields[field]?.type ?? 'String';
}

/** Types whose values have an order the service sorts by. */
const SORTABLE_TYPES = new Set<FieldType>(['String', 'Number', 'Boolean', 'Date']);

/** Columns the grid may sort by: objectId, the timestamps and every field of a sortable type. */
export function sortableFields(schema: SchemaDoc): string[] {
  const out = new Set<string>(['objectId', 'createdAt', 'updatedAt']);
  for (const [name, spec] of Object.entries(schema.fields)) if (SORTABLE_TYPES.has(spec.type)) out.add(name);
  return [...out];
}

/** Columns the service sorts without reading the whole class: objectId, timestamps, first index keys. */
export function indexedFields(schema: SchemaDoc): string[] {
  const out = new Set<string>(['objectId', 'createdAt', 'updatedAt']);
  for (const keys of Object.values(schema.indexes ?? {})) {
    const first = Object.keys(keys)[0];
    if (first && first !== '_id') out.add(first);
  }
  return [...out];
}

/** The ISO string of a date as stored on the wire (`createdAt` is a plain string). */
export function dateIso(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (isPlainObject(v) && v.__type === 'Date' && typeof v.iso === 'string') return v.iso;
  return null;
}

/** A value as the where clause expects it for comparisons on a field of this type. */
export function toQueryValue(type: FieldType, v: unknown): unknown {
  if (type === 'Date') {
    const iso = dateIso(v);
    return iso === null ? v : { __type: 'Date', iso };
  }
  return v;
}

export function aclSummary(v: unknown): string {
  if (!isPlainObject(v)) return v === undefined || v === null ? '' : String(v);
  const parts: string[] = [];
  for (const [who, perms] of Object.entries(v)) {
    if (!isPlainObject(perms)) continue;
    const rw = `${perms.read ? 'r' : ''}${perms.write ? 'w' : ''}` || '-';
    const name = who === '*' ? 'Public' : who.startsWith('role:') ? who : `user ${who}`;
    parts.push(`${name}: ${rw}`);
  }
  return parts.length ? parts.join(', ') : 'Master key only';
}

/** Short one-line text of any wire value (for cells, CSV, titles). */
export function displayText(type: FieldType, v: unknown): string {
  if (v === undefined || v === null) return '';
  switch (type) {
    case 'Date': {
      const iso = dateIso(v);
      if (!iso) return JSON.stringify(v);
      const d = new Date(iso);
      return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
    }
    case 'Pointer':
      return isPlainObject(v) ? String(v.objectId ?? '') : String(v);
    case 'File':
      return isPlainObject(v) ? String(v.name ?? '') : String(v);
    case 'GeoPoint':
      return isPlainObject(v) ? `(${v.latitude}, ${v.longitude})` : String(v);
    case 'ACL':
      return aclSummary(v);
    case 'Boolean':
      return v ? 'true' : 'false';
    case 'Relation':
      return isPlainObject(v) ? `Relation<${String(v.className ?? '')}>` : 'Relation';
    case 'String':
    case 'Number':
      return typeof v === 'object' ? JSON.stringify(v) : String(v);
    default:
      return typeof v === 'string' ? v : JSON.stringify(v);
  }
}

/** Text put in an editor for a value. */
export function editText(type: FieldType, v: unknown): string {
  if (v === undefined || v === null) return '';
  switch (type) {
    case 'String':
      return typeof v === 'string' ? v : JSON.stringify(v);
    case 'Number':
      return String(v);
    case 'Boolean':
      return v ? 'true' : 'false';
    case 'Date':
      return dateIso(v) ?? '';
    case 'Pointer':
      return isPlainObject(v) ? String(v.objectId ?? '') : '';
    case 'GeoPoint':
      return isPlainObject(v) ? `${v.latitude}, ${v.longitude}` : '';
    default:
      return JSON.stringify(v, null, 2);
  }
}

export type ParseResult = { ok: true; value: unknown } | { ok: false; error: string };

/** What an editor says to empty input: removing a value is its own action, never a blank. */
export const NOTHING_TYPED = 'Nothing typed: use Unset to remove the value.';

/** A decimal number as people type it: no hex, no separators, no second sign. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * Reads the text of an editor as a value of the field's type, or says why it cannot. Empty text
 * is the empty string for a String and refused for every other type: an editor never turns a
 * blank (or a browser's rejected input) into "remove the field".
 */
export function parseEdit(type: FieldType, text: string, targetClass?: string): ParseResult {
  if (type === 'String') return { ok: true, value: text };
  const t = text.trim();
  if (t === '') return { ok: false, error: NOTHING_TYPED };
  switch (type) {
    case 'Number': {
      if (!DECIMAL.test(t)) return { ok: false, error: `"${t}" is not a number` };
      const n = Number(t);
      return Number.isFinite(n)
        ? { ok: true, value: n }
        : { ok: false, error: `"${t}" is too large for a number` };
    }
    case 'Boolean':
      if (/^(true|1|yes)$/i.test(t)) return { ok: true, value: true };
      if (/^(false|0|no)$/i.test(t)) return { ok: true, value: false };
      return { ok: false, error: `"${t}" is not a boolean` };
    case 'Date': {
      const d = new Date(t);
      return Number.isNaN(d.getTime())
        ? { ok: false, error: `"${t}" is not a date` }
        : { ok: true, value: { __type: 'Date', iso: d.toISOString() } };
    }
    case 'Pointer':
      return t.startsWith('{') ? pointerJson(t, targetClass) : pointerTo(targetClass, t);
    case 'GeoPoint': {
      if (t.startsWith('{')) {
        const r = parseJson(t);
        if (!r.ok) return r;
        const v = r.value;
        if (!isPlainObject(v) || v.__type !== 'GeoPoint')
          return { ok: false, error: 'expected {"__type": "GeoPoint", "latitude": …, "longitude": …}' };
        return geoPoint(v.latitude, v.longitude);
      }
      const m = /^\(?\s*([^\s,;()]+)\s*[,;\s]\s*([^\s,;()]+)\s*\)?$/.exec(t);
      if (!m || !DECIMAL.test(m[1]!) || !DECIMAL.test(m[2]!))
        return { ok: false, error: `"${t}" is not "latitude, longitude"` };
      return geoPoint(Number(m[1]), Number(m[2]));
    }
    case 'Array': {
      const r = parseJson(t);
      if (r.ok && !Array.isArray(r.value)) return { ok: false, error: 'expected a JSON array' };
      return r;
    }
    case 'Object': {
      const r = parseJson(t);
      if (r.ok && !isPlainObject(r.value)) return { ok: false, error: 'expected a JSON object' };
      return r;
    }
    case 'ACL': {
      const r = parseJson(t);
      if (!r.ok) return r;
      if (!isPlainObject(r.value)) return { ok: false, error: 'expected a JSON object' };
      const problem = aclProblem(r.value);
      return problem ? { ok: false, error: problem } : r;
    }
    default:
      return parseJson(t);
  }
}

function pointerTo(targetClass: string | undefined, objectId: string): ParseResult {
  if (!targetClass) return { ok: false, error: 'pointer without a target class' };
  if (!OBJECT_ID_PATTERN.test(objectId)) return { ok: false, error: `"${objectId}" is not an objectId` };
  return { ok: true, value: { __type: 'Pointer', className: targetClass, objectId } };
}

function pointerJson(text: string, targetClass: string | undefined): ParseResult {
  const r = parseJson(text);
  if (!r.ok) return r;
  const v = r.value;
  if (!isPlainObject(v) || v.__type !== 'Pointer' || typeof v.objectId !== 'string')
    return { ok: false, error: 'expected {"__type": "Pointer", "className": …, "objectId": …}' };
  if (targetClass && v.className !== targetClass)
    return { ok: false, error: `this column points to ${targetClass}, not ${String(v.className)}` };
  return pointerTo(targetClass ?? (typeof v.className === 'string' ? v.className : undefined), v.objectId);
}

function geoPoint(latitude: unknown, longitude: unknown): ParseResult {
  if (
    typeof latitude !== 'number' ||
    typeof longitude !== 'number' ||
    !(latitude >= -90 && latitude <= 90) ||
    !(longitude >= -180 && longitude <= 180)
  )
    return { ok: false, error: 'latitude must be in [-90, 90] and longitude in [-180, 180]' };
  return { ok: true, value: { __type: 'GeoPoint', latitude, longitude } };
}

/** Why a parsed ACL is not one (each entry holds only true/false `read` and `write`), or null. */
function aclProblem(acl: Record<string, unknown>): string | null {
  for (const [who, perm] of Object.entries(acl)) {
    if (!isPlainObject(perm)) return `ACL entry "${who}": expected {"read": true, "write": true}`;
    for (const [key, flag] of Object.entries(perm)) {
      if (key !== 'read' && key !== 'write') return `ACL entry "${who}": only read and write are allowed`;
      if (typeof flag !== 'boolean') return `ACL entry "${who}": read and write must be true or false`;
    }
  }
  return null;
}

export function parseJson(text: string): ParseResult {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, error: `invalid JSON: ${(err as Error).message}` };
  }
}
