import { describe, expect, it } from 'vitest';
import type { Version } from '../src/features/data-browser/api/history.ts';
import {
  callerText,
  fieldChanges,
  revertFields,
  valueText,
} from '../src/features/data-browser/lib/versions.ts';
import { rowHistoryPath, rowOfTarget } from '../src/lib/row-history.ts';

describe('row history: field changes', () => {
  it('lists changed, added and removed fields by name, without the bookkeeping fields', () => {
    const before = { objectId: 'a', updatedAt: 't1', title: 'first', tags: ['x'], gone: 1, same: { k: 1 } };
    const after = {
      objectId: 'a',
      updatedAt: 't2',
      title: 'second',
      tags: ['x'],
      added: null,
      same: { k: 1 },
    };
    expect(fieldChanges(before, after)).toEqual([
      { field: 'added', before: undefined, after: null },
      { field: 'gone', before: 1, after: undefined },
      { field: 'title', before: 'first', after: 'second' },
    ]);
  });

  it('a create lists every field set; nothing on either side lists nothing', () => {
    expect(fieldChanges(null, { objectId: 'a', createdAt: 't', n: 1 })).toEqual([
      { field: 'n', before: undefined, after: 1 },
    ]);
    expect(fieldChanges(undefined, null)).toEqual([]);
    // Objects compare by value, not by key order.
    expect(fieldChanges({ o: { a: 1, b: 2 } }, { o: { b: 2, a: 1 } })).toEqual([]);
  });

  it('says values in one line: dates and pointers by what they name, the rest as JSON', () => {
    expect(valueText(undefined)).toBe('(not set)');
    expect(valueText('first')).toBe('"first"');
    expect(valueText(null)).toBe('null');
    expect(valueText({ __type: 'Date', iso: '2026-11-29T15:00:00.000Z' })).toBe('2026-11-29T15:00:00.000Z');
    expect(valueText({ __type: 'Pointer', className: 'Post', objectId: 'p1' })).toBe('Post/p1');
    expect(valueText('x'.repeat(200))).toHaveLength(80);
  });

  it('names the caller by kind and name or user id', () => {
    expect(callerText({ kind: 'console', name: 'admin' })).toBe('console · admin');
    expect(callerText({ kind: 'user', userId: 'u1' })).toBe('user · u1');
    expect(callerText({ kind: 'user', userId: 'u1', name: 'ann' })).toBe('user · ann');
    expect(callerText({ kind: 'master' })).toBe('master');
  });

  it('a revert to a delete brings back the fields before it', () => {
    const v = (op: Version['op']): Version => ({
      id: 'v',
      className: 'C',
      objectId: 'a',
      op,
      time: '2026-11-29T15:00:00.000Z',
      before: { n: 1 },
      after: op === 'delete' ? null : { n: 2 },
      caller: { kind: 'master' },
      source: 'rest',
      eventId: null,
      requestId: null,
    });
    expect(revertFields(v('update'))).toEqual({ n: 2 });
    expect(revertFields(v('delete'))).toEqual({ n: 1 });
  });
});

describe('row history: links', () => {
  it('opens the row panel on its History tab', () => {
    expect(rowHistoryPath('my app', 'Post', 'abc')).toBe('/apps/my%20app/data/Post?row=abc&history=1');
  });

  it('reads the row of an audit target, and nothing else', () => {
    expect(rowOfTarget('Post/abc123')).toEqual({ className: 'Post', objectId: 'abc123' });
    expect(rowOfTarget('_User/u1')).toEqual({ className: '_User', objectId: 'u1' });
    for (const target of ['Post', 'Post.title', 'config', 'hooks/functions/x', 'http://x/parse'])
      expect(rowOfTarget(target), target).toBeNull();
  });
});
