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

export const isSystemClass = (name: string): boolean => name.startsWith('_');

import { isObject as isPlainObject } from '@bds/client/protocol';

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

/**
 * Reads the text of an editor (or a CSV cell) as a value of the field's type. Empty text means
 * "unset" (`{__op: 'Delete'}` is the caller's choice) and is returned as `undefined`.
 */
export function parseEdit(type: FieldType, text: string, targetClass?: string): ParseResult {
  const t = text.trim();
  if (t === '') return { ok: true, value: undefined };
  switch (type) {
    case 'String':
      return { ok: true, value: text };
    case 'Number': {
      const n = Number(t);
      return Number.isFinite(n) ? { ok: true, value: n } : { ok: false, error: `"${t}" is not a number` };
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
    case 'Pointer': {
      if (t.startsWith('{')) return parseJson(t);
      if (!targetClass) return { ok: false, error: 'pointer without a target class' };
      return { ok: true, value: { __type: 'Pointer', className: targetClass, objectId: t } };
    }
    case 'GeoPoint': {
      if (t.startsWith('{')) return parseJson(t);
      const m = /^\(?\s*(-?[\d.]+)\s*[,;\s]\s*(-?[\d.]+)\s*\)?$/.exec(t);
      if (!m) return { ok: false, error: `"${t}" is not "latitude, longitude"` };
      const latitude = Number(m[1]);
      const longitude = Number(m[2]);
      if (!(latitude >= -90 && latitude <= 90) || !(longitude >= -180 && longitude <= 180))
        return { ok: false, error: 'latitude must be in [-90, 90] and longitude in [-180, 180]' };
      return { ok: true, value: { __type: 'GeoPoint', latitude, longitude } };
    }
    case 'Array': {
      const r = parseJson(t);
      if (r.ok && !Array.isArray(r.value)) return { ok: false, error: 'expected a JSON array' };
      return r;
    }
    case 'Object':
    case 'ACL': {
      const r = parseJson(t);
      if (r.ok && !isPlainObject(r.value)) return { ok: false, error: 'expected a JSON object' };
      return r;
    }
    default:
      return parseJson(t);
  }
}

export function parseJson(text: string): ParseResult {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, error: `invalid JSON: ${(err as Error).message}` };
  }
}
