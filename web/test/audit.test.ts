import { describe, expect, it } from 'vitest';
import { dayBound, toQuery } from '../src/features/audit/hooks/use-audit-filters.ts';
import { diffJson, preview } from '../src/lib/json-diff.ts';

describe('audit before/after diff', () => {
  it('lists added, removed and changed paths, nested and in arrays', () => {
    const before = { a: 1, b: { c: 'x', d: [1, 2] }, gone: true, 'odd key': 1 };
    const after = { a: 2, b: { c: 'x', d: [1, 3, 4] }, added: null, 'odd key': 1 };
    expect(diffJson(before, after)).toEqual([
      { path: 'a', kind: 'changed', before: 1, after: 2 },
      { path: 'added', kind: 'added', after: null },
      { path: 'b.d[1]', kind: 'changed', before: 2, after: 3 },
      { path: 'b.d[2]', kind: 'added', after: 4 },
      { path: 'gone', kind: 'removed', before: true },
    ]);
  });

  it('treats a missing side (create, delete) as a whole-value change', () => {
    expect(diffJson(null, { x: 1 })).toEqual([{ path: '', kind: 'added', after: { x: 1 } }]);
    expect(diffJson({ x: 1 }, undefined)).toEqual([{ path: '', kind: 'removed', before: { x: 1 } }]);
    expect(diffJson({ x: [1] }, { x: [1] })).toEqual([]);
    expect(diffJson({ 'a-b': 1 }, { 'a-b': 2 })[0]?.path).toBe('["a-b"]');
  });

  it('shortens long previews', () => {
    expect(preview('x'.repeat(500), 20)).toHaveLength(20);
    expect(preview({ a: 1 })).toBe('{"a":1}');
  });
});

describe('audit filters', () => {
  it('turns local days into ISO bounds and drops empty filters', () => {
    expect(dayBound('2024-05-01', false)).toBe(new Date(2024, 4, 1).toISOString());
    expect(dayBound('2024-05-01', true)).toBe(new Date(2024, 4, 1, 23, 59, 59, 999).toISOString());
    expect(dayBound('yesterday', false)).toBeUndefined();
    expect(
      toQuery('app', { user: ' admin ', action: '', target: 'GameScore', since: '2024-05-01', until: '' }),
    ).toEqual({ app: 'app', user: 'admin', target: 'GameScore', since: new Date(2024, 4, 1).toISOString() });
  });
});
