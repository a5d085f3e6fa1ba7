/**
 * Type inference for the columns of an import that the class does not have yet: the mapping
 * step proposes these types, the user confirms or changes them before any row is written.
 */
import { type FieldType, isPlainObject } from './wire.ts';

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
