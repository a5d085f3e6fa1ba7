import { describe, expect, it } from 'vitest';
import { buildUpdate, diffConfig } from '../src/features/config/lib/diff.ts';
import { parseText, toText, typeOfValue } from '../src/features/config/lib/values.ts';

describe('config values', () => {
  const cases: Array<[unknown, string]> = [
    ['hello', 'string'],
    [42, 'number'],
    [true, 'boolean'],
    [null, 'null'],
    [[1, 'a'], 'array'],
    [{ a: { b: 1 } }, 'object'],
    [{ __type: 'Date', iso: '2024-05-01T10:00:00.000Z' }, 'date'],
    [{ __type: 'GeoPoint', latitude: 48.85, longitude: 2.35 }, 'geopoint'],
  ];
  it.each(cases)('round-trips %j as %s through its text form', (value, type) => {
    const t = typeOfValue(value);
    expect(t).toBe(type);
    const parsed = parseText(toText(value, t), t);
    expect(parsed).toEqual({ ok: true, value });
  });

  it.each([
    ['abc', 'number'],
    ['', 'number'],
    ['yes', 'boolean'],
    ['not a date', 'date'],
    ['91, 0', 'geopoint'],
    ['{"a":', 'object'],
    ['{}', 'array'],
    ['[]', 'object'],
  ] as const)('refuses %j as %s', (text, type) => {
    expect(parseText(text, type).ok).toBe(false);
  });
});

describe('config diff', () => {
  const before = {
    params: { keep: 1, change: 'a', drop: true, obj: { x: 1, y: 2 }, flagOnly: 'v' },
    masterKeyOnly: { drop: true },
  };

  it('lists added, removed, changed and flag-only changes, ignoring key order', () => {
    const after = {
      params: { keep: 1, change: 'b', obj: { y: 2, x: 1 }, flagOnly: 'v', added: [1] },
      masterKeyOnly: { flagOnly: true, added: true },
    };
    expect(diffConfig(before, after)).toEqual([
      { name: 'added', kind: 'added', after: [1], flag: { before: false, after: true } },
      { name: 'change', kind: 'changed', before: 'a', after: 'b' },
      { name: 'drop', kind: 'removed', before: true },
      { name: 'flagOnly', kind: 'unchanged', before: 'v', after: 'v', flag: { before: false, after: true } },
    ]);
  });

  it('builds the PUT /config body with deletes as {__op: Delete}', () => {
    const after = { params: { keep: 2, obj: { x: 1, y: 2 }, flagOnly: 'v', change: 'a' }, masterKeyOnly: {} };
    expect(buildUpdate(diffConfig(before, after))).toEqual({
      params: { keep: 2, drop: { __op: 'Delete' } },
      masterKeyOnly: {},
    });
  });

  it('reads audit entries with missing before/after', () => {
    expect(diffConfig(null, { params: { a: 1 } })).toEqual([{ name: 'a', kind: 'added', after: 1 }]);
  });
});
