/** A structural diff of two JSON values (an audit entry's before and after), by path. */

import { isObject } from '@bds/client/protocol';

export type JsonChangeKind = 'added' | 'removed' | 'changed';

export interface JsonChange {
  /** `a.b[2].c`; `` (empty) for the whole value. */
  path: string;
  kind: JsonChangeKind;
  before?: unknown;
  after?: unknown;
}

const KEY = /^[A-Za-z_$][\w$]*$/;
const join = (base: string, key: string): string =>
  KEY.test(key) ? (base ? `${base}.${key}` : key) : `${base}[${JSON.stringify(key)}]`;

/** Every difference between `before` and `after`; objects are compared key by key, arrays by index. */
export function diffJson(before: unknown, after: unknown, path = ''): JsonChange[] {
  if (before === undefined) before = null;
  if (after === undefined) after = null;
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => {
      const p = join(path, k);
      if (!Object.hasOwn(before, k)) return [{ path: p, kind: 'added' as const, after: after[k] }];
      if (!Object.hasOwn(after, k)) return [{ path: p, kind: 'removed' as const, before: before[k] }];
      return diffJson(before[k], after[k], p);
    });
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const changes: JsonChange[] = [];
    for (let i = 0; i < Math.max(before.length, after.length); i++) {
      const p = `${path}[${i}]`;
      if (i >= before.length) changes.push({ path: p, kind: 'added', after: after[i] });
      else if (i >= after.length) changes.push({ path: p, kind: 'removed', before: before[i] });
      else changes.push(...diffJson(before[i], after[i], p));
    }
    return changes;
  }
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  if (before === null) return [{ path, kind: 'added', after }];
  if (after === null) return [{ path, kind: 'removed', before }];
  return [{ path, kind: 'changed', before, after }];
}

/** Compact one-line JSON for a value in the change list. */
export function preview(value: unknown, max = 120): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
