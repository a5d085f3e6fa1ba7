/**
 * Keyset pagination: the next page starts after the last row seen, by the sort key with objectId
 * as tie-breaker. `skip` is only used to jump into the middle of a class (a scrollbar drag).
 */
import { FIELD_NAME_PATTERN } from '@bds/client/protocol';
import { type FieldType, isPlainObject, toQueryValue } from '../../../lib/wire.ts';

export interface Sort {
  field: string;
  desc: boolean;
}

export type Where = Record<string, unknown>;

export const DEFAULT_SORT: Sort = { field: 'objectId', desc: false };

/** `order` parameter: the sort key, then objectId in the same direction. */
export function orderParam(sort: Sort): string {
  const dir = sort.desc ? '-' : '';
  if (sort.field === 'objectId') return `${dir}objectId`;
  return `${dir}${sort.field},${dir}objectId`;
}

export function parseSort(text: string | null | undefined): Sort {
  if (!text) return DEFAULT_SORT;
  const desc = text.startsWith('-');
  const field = desc ? text.slice(1) : text;
  return FIELD_NAME_PATTERN.test(field) ? { field, desc } : DEFAULT_SORT;
}

export const sortText = (sort: Sort): string => `${sort.desc ? '-' : ''}${sort.field}`;

/** AND of two where clauses, without nesting when either is empty. */
export function andWhere(a: Where | undefined, b: Where | undefined): Where {
  const ea = !a || Object.keys(a).length === 0;
  const eb = !b || Object.keys(b).length === 0;
  if (ea) return eb ? {} : { ...b };
  if (eb) return { ...a };
  return { $and: [a, b] };
}

export interface Cursor {
  /** Sort-key value of the last row seen (wire form), `undefined` when sorting by objectId. */
  value?: unknown;
  objectId: string;
}

/** The cursor after `row`, or `null` when the row has no usable sort value (missing/null). */
export function cursorOf(row: Record<string, unknown>, sort: Sort): Cursor | null {
  const objectId = row.objectId;
  if (typeof objectId !== 'string') return null;
  if (sort.field === 'objectId') return { objectId };
  const value = row[sort.field];
  if (value === undefined || value === null) return null;
  if (isPlainObject(value) && value.__type !== 'Date' && value.__type !== 'Pointer') return null;
  if (Array.isArray(value)) return null;
  return { value, objectId };
}

/**
 * The where clause of the page after `cursor`: base AND (key > v OR (key = v AND objectId > id)),
 * with `<` for a descending sort.
 */
export function keysetWhere(
  base: Where | undefined,
  sort: Sort,
  cursor: Cursor | null,
  type: FieldType = 'String',
): Where {
  if (!cursor) return andWhere(base, undefined);
  const cmp = sort.desc ? '$lt' : '$gt';
  if (sort.field === 'objectId') return andWhere(base, { objectId: { [cmp]: cursor.objectId } });
  const v = toQueryValue(type, cursor.value);
  const after: Where = {
    $or: [{ [sort.field]: { [cmp]: v } }, { [sort.field]: v, objectId: { [cmp]: cursor.objectId } }],
  };
  return andWhere(base, after);
}

export interface PageRequest {
  where: Where;
  order: string;
  limit: number;
  skip?: number;
}

/**
 * The request for page `index` of `size` rows: keyset after the previous page's last row when it
 * is known, otherwise skip (a jump).
 */
export function pageRequest(
  base: Where | undefined,
  sort: Sort,
  index: number,
  size: number,
  previousLast: Record<string, unknown> | undefined,
  type: FieldType = 'String',
): PageRequest {
  const order = orderParam(sort);
  if (index === 0) return { where: andWhere(base, undefined), order, limit: size };
  const cursor = previousLast ? cursorOf(previousLast, sort) : null;
  if (cursor) return { where: keysetWhere(base, sort, cursor, type), order, limit: size };
  return { where: andWhere(base, undefined), order, limit: size, skip: index * size };
}
