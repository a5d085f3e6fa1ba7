import { isObject } from '@bds/client/protocol';
import { invalidQuery } from '../kernel/errors.ts';
import type { Path } from '../kernel/query.ts';

/**
 * Matching of aggregation documents (rows already grouped, projected or unwound, no longer rows of
 * a class) against a `$match`: equality, $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, and
 * $and, $or, $nor. Dates compare by their instant, pointers by objectId.
 */
export function valueAt(doc: unknown, path: Path): unknown {
  let node = doc;
  for (const key of path) {
    if (!isObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** The scalar a wire value compares as. */
export function comparable(value: unknown): unknown {
  if (isObject(value)) {
    if (value.__type === 'Date') return value.iso;
    if (value.__type === 'Pointer' || value.__type === 'Object') return value.objectId;
  }
  return value;
}

function same(a: unknown, b: unknown): boolean {
  const x = comparable(a);
  const y = comparable(b);
  if (x === y) return true;
  if (typeof x === 'object' && typeof y === 'object') return JSON.stringify(x) === JSON.stringify(y);
  return false;
}

/** Orders two values: numbers and strings by themselves, null and missing first. */
export function compareValues(a: unknown, b: unknown): number {
  const x = comparable(a);
  const y = comparable(b);
  if (x === y) return 0;
  if (x === undefined || x === null) return -1;
  if (y === undefined || y === null) return 1;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
}

function ordered(a: unknown, b: unknown): boolean {
  const x = comparable(a);
  const y = comparable(b);
  return (typeof x === 'number' && typeof y === 'number') || (typeof x === 'string' && typeof y === 'string');
}

function condition(value: unknown, spec: unknown): boolean {
  const elements = Array.isArray(value) ? value : [value];
  if (!isObject(spec) || Object.keys(spec).every((k) => !k.startsWith('$')) || spec.__type !== undefined) {
    return elements.some((v) => same(v, spec)) || same(value, spec);
  }
  return Object.entries(spec).every(([op, arg]) => {
    switch (op) {
      case '$eq':
        return elements.some((v) => same(v, arg)) || same(value, arg);
      case '$ne':
        return !elements.some((v) => same(v, arg));
      case '$gt':
        return elements.some((v) => ordered(v, arg) && compareValues(v, arg) > 0);
      case '$gte':
        return elements.some((v) => ordered(v, arg) && compareValues(v, arg) >= 0);
      case '$lt':
        return elements.some((v) => ordered(v, arg) && compareValues(v, arg) < 0);
      case '$lte':
        return elements.some((v) => ordered(v, arg) && compareValues(v, arg) <= 0);
      case '$in':
        if (!Array.isArray(arg)) throw invalidQuery('$in takes an array.');
        return arg.some((a) => elements.some((v) => same(v, a)));
      case '$nin':
        if (!Array.isArray(arg)) throw invalidQuery('$nin takes an array.');
        return !arg.some((a) => elements.some((v) => same(v, a)));
      case '$exists':
        return (value !== undefined && value !== null) === Boolean(arg);
      default:
        throw invalidQuery(`${op} is not supported in a $match after $group, $project, $unwind or $lookup.`);
    }
  });
}

export function matchesDoc(doc: unknown, where: Record<string, unknown>): boolean {
  return Object.entries(where).every(([key, spec]) => {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(spec)) throw invalidQuery(`${key} takes an array.`);
      const results = spec.map((w) => matchesDoc(doc, w as Record<string, unknown>));
      return key === '$and'
        ? results.every(Boolean)
        : key === '$or'
          ? results.some(Boolean)
          : !results.some(Boolean);
    }
    const path = key.split('.');
    if (path[0] === '_id') path[0] = 'objectId';
    return condition(valueAt(doc, path), spec);
  });
}
