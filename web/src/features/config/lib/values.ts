/** Config parameter values: their wire type, an editable text form, and parsing back. */

import { isObject } from '@bds/client/protocol';

export type ParamType = 'string' | 'number' | 'boolean' | 'date' | 'geopoint' | 'object' | 'array' | 'null';

export const PARAM_TYPES: ParamType[] = [
  'string',
  'number',
  'boolean',
  'date',
  'geopoint',
  'object',
  'array',
  'null',
];

export function typeOfValue(value: unknown): ParamType {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (Array.isArray(value)) return 'array';
  if (isObject(value) && value.__type === 'Date' && typeof value.iso === 'string') return 'date';
  if (isObject(value) && value.__type === 'GeoPoint') return 'geopoint';
  return 'object';
}

/** The text a value is edited as: JSON for object/array, "lat, lng" for a geopoint, ISO for a date. */
export function toText(value: unknown, type: ParamType = typeOfValue(value)): string {
  switch (type) {
    case 'null':
      return '';
    case 'string':
      return typeof value === 'string' ? value : '';
    case 'number':
    case 'boolean':
      return String(value);
    case 'date':
      return isObject(value) ? String(value.iso) : '';
    case 'geopoint':
      return isObject(value) ? `${value.latitude}, ${value.longitude}` : '';
    default:
      return JSON.stringify(value, null, 2);
  }
}

/** A fresh value's text when the type of a parameter is switched. */
export function defaultText(type: ParamType): string {
  switch (type) {
    case 'number':
      return '0';
    case 'boolean':
      return 'false';
    case 'date':
      return new Date().toISOString();
    case 'geopoint':
      return '0, 0';
    case 'object':
      return '{}';
    case 'array':
      return '[]';
    default:
      return '';
  }
}

export type Parsed = { ok: true; value: unknown } | { ok: false; error: string };

export function parseText(text: string, type: ParamType): Parsed {
  switch (type) {
    case 'null':
      return { ok: true, value: null };
    case 'string':
      return { ok: true, value: text };
    case 'number': {
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n)
        ? { ok: true, value: n }
        : { ok: false, error: 'not a number' };
    }
    case 'boolean':
      return text === 'true' || text === 'false'
        ? { ok: true, value: text === 'true' }
        : { ok: false, error: 'must be true or false' };
    case 'date': {
      const t = Date.parse(text);
      return Number.isNaN(t)
        ? { ok: false, error: 'not a date' }
        : { ok: true, value: { __type: 'Date', iso: new Date(t).toISOString() } };
    }
    case 'geopoint': {
      const parts = text.split(',').map((p) => Number(p.trim()));
      const [latitude, longitude] = parts;
      if (parts.length !== 2 || !Number.isFinite(latitude) || !Number.isFinite(longitude))
        return { ok: false, error: 'must be "latitude, longitude"' };
      if (Math.abs(latitude!) > 90 || Math.abs(longitude!) > 180)
        return { ok: false, error: 'latitude must be within ±90, longitude within ±180' };
      return { ok: true, value: { __type: 'GeoPoint', latitude, longitude } };
    }
    case 'object':
    case 'array': {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        return { ok: false, error: `invalid JSON: ${(err as Error).message}` };
      }
      if (type === 'array' && !Array.isArray(value)) return { ok: false, error: 'must be a JSON array' };
      if (type === 'object' && !isObject(value)) return { ok: false, error: 'must be a JSON object' };
      return { ok: true, value };
    }
  }
}

/** JSON with sorted keys: equal values give equal strings. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const sameValue = (a: unknown, b: unknown): boolean => stableStringify(a) === stableStringify(b);

/** A short one-line rendering for diffs and history. */
export function preview(value: unknown): string {
  const type = typeOfValue(value);
  if (type === 'string') return JSON.stringify(value);
  if (type === 'date') return `Date ${toText(value, type)}`;
  if (type === 'geopoint') return `GeoPoint (${toText(value, type)})`;
  const s = type === 'object' || type === 'array' ? JSON.stringify(value) : String(value);
  return s.length > 120 ? `${s.slice(0, 117)}…` : s;
}
