/**
 * Type inference for the columns of an import that the class does not have yet: the mapping
 * step proposes these types, the user confirms or changes them before any row is written.
 */
import { type FieldType, isPlainObject } from '../../../lib/wire.ts';

export interface ColumnGuess {
  type: FieldType;
  targetClass?: string;
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const NUMBER = /^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const BOOLEAN = /^(true|false)$/i;

/** The type of one JSON value, as the service would store it. */
function typeOfJson(v: unknown): ColumnGuess {
  if (typeof v === 'number') return { type: 'Number' };
  if (typeof v === 'boolean') return { type: 'Boolean' };
  if (typeof v === 'string') return ISO_DATE.test(v) ? { type: 'Date' } : { type: 'String' };
  if (Array.isArray(v)) return { type: 'Array' };
  if (isPlainObject(v)) {
    if (v.__type === 'Date') return { type: 'Date' };
    if (v.__type === 'Pointer' && typeof v.className === 'string')
      return { type: 'Pointer', targetClass: v.className };
    if (v.__type === 'GeoPoint') return { type: 'GeoPoint' };
    if (v.__type === 'File') return { type: 'File' };
    if (v.__type === 'Polygon') return { type: 'Polygon' };
    if (v.__type === 'Bytes') return { type: 'Bytes' };
    return { type: 'Object' };
  }
  return { type: 'String' };
}

/** The type of one CSV cell's text (cells hold JSON for structured values, as the export writes them). */
function typeOfText(text: string): ColumnGuess {
  const t = text.trim();
  if (NUMBER.test(t)) return { type: 'Number' };
  if (BOOLEAN.test(t)) return { type: 'Boolean' };
  if (ISO_DATE.test(t)) return { type: 'Date' };
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return typeOfJson(JSON.parse(t));
    } catch {
      return { type: 'String' };
    }
  }
  return { type: 'String' };
}

/**
 * One type that fits every sampled value: the common type when all agree, String otherwise
 * (a String column takes any text). Empty cells and nulls say nothing.
 */
export function inferColumn(values: unknown[], from: 'csv' | 'json'): ColumnGuess {
  let guess: ColumnGuess | null = null;
  for (const v of values) {
    if (v === undefined || v === null || v === '') continue;
    const g = from === 'csv' && typeof v === 'string' ? typeOfText(v) : typeOfJson(v);
    if (!guess) guess = g;
    else if (guess.type !== g.type || guess.targetClass !== g.targetClass) return { type: 'String' };
  }
  return guess ?? { type: 'String' };
}

/** Dimensions a Vector column may have (the service's bounds). */
export const VECTOR_DIMENSION_MAX = 4096;

/**
 * The dimension to propose when a column is mapped to Vector: the length shared by every sampled
 * value that is an array of numbers (CSV cells hold them as JSON), or undefined when they differ
 * or there is none.
 */
export function vectorDimension(values: unknown[], from: 'csv' | 'json'): number | undefined {
  let dim: number | undefined;
  for (const raw of values) {
    if (raw === undefined || raw === null || raw === '') continue;
    let v = raw;
    if (from === 'csv' && typeof raw === 'string') {
      try {
        v = JSON.parse(raw);
      } catch {
        return undefined;
      }
    }
    if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'number')) return undefined;
    if (dim === undefined) dim = v.length;
    else if (dim !== v.length) return undefined;
  }
  return dim !== undefined && dim <= VECTOR_DIMENSION_MAX ? dim : undefined;
}

/** The mapping step's dimension text as a dimension, or an error to show. */
export function parseDimension(text: string): { ok: true; value: number } | { ok: false; error: string } {
  const n = Number(text.trim());
  return text.trim() !== '' && Number.isInteger(n) && n >= 1 && n <= VECTOR_DIMENSION_MAX
    ? { ok: true, value: n }
    : { ok: false, error: `a whole number from 1 to ${VECTOR_DIMENSION_MAX}` };
}
