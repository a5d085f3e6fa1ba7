import { describe, expect, it } from 'vitest';
import { type ApiCall, parseBody, parseObject } from '../src/features/api-console/lib/call.ts';
import {
  addToHistory,
  clearHistory,
  HISTORY_LIMIT,
  historyKey,
  readHistory,
} from '../src/features/api-console/lib/history.ts';

/** A Storage kept in memory (the browser's localStorage in the console). */
class MemoryStorage implements Storage {
  private items = new Map<string, string>();
  get length() {
    return this.items.size;
  }
  clear() {
    this.items.clear();
  }
  getItem(key: string) {
    return this.items.get(key) ?? null;
  }
  key(i: number) {
    return [...this.items.keys()][i] ?? null;
  }
  removeItem(key: string) {
    this.items.delete(key);
  }
  setItem(key: string, value: string) {
    this.items.set(key, value);
  }
}

describe('the call typed on screen', () => {
  it('query: a JSON object or empty', () => {
    expect(parseObject('', 'Query')).toEqual({ ok: true, value: {} });
    expect(parseObject('{"limit": 2}', 'Query')).toEqual({ ok: true, value: { limit: 2 } });
    expect(parseObject('[1]', 'Query')).toEqual({
      ok: false,
      error: 'Query must be a JSON object, e.g. {"limit": 10}.',
    });
    expect(parseObject('{', 'Query').ok).toBe(false);
  });

  it('body: a JSON object or array, empty means none', () => {
    expect(parseBody(' ')).toEqual({ ok: true, value: undefined });
    expect(parseBody('[{"a":1}]')).toEqual({ ok: true, value: [{ a: 1 }] });
    expect(parseBody('3')).toEqual({ ok: false, error: 'Body must be a JSON object or array.' });
  });
});

describe('history', () => {
  const call: ApiCall = {
    method: 'POST',
    path: '/users',
    query: {},
    body: { username: 'zoe', password: 'hunter2', nested: { sessionToken: 'r:abc' } },
    as: { kind: 'user', userId: 'u1', username: 'ann' },
  };

  it('keeps calls newest first, per app, and never a password or token', () => {
    const storage = new MemoryStorage();
    addToHistory(storage, 'a', call, new Date('2026-01-01T00:00:00Z'));
    addToHistory(storage, 'a', { ...call, method: 'GET', body: undefined, path: '/classes/Post' });
    addToHistory(storage, 'b', call);
    const a = readHistory(storage, 'a');
    expect(a.map((e) => `${e.call.method} ${e.call.path}`)).toEqual(['GET /classes/Post', 'POST /users']);
    expect(a[1]!.call.body).toEqual({
      username: 'zoe',
      password: '[FILTERED]',
      nested: { sessionToken: '[FILTERED]' },
    });
    expect(a[1]!.at).toBe('2026-01-01T00:00:00.000Z');
    expect(a[1]!.call.as).toEqual({ kind: 'user', userId: 'u1', username: 'ann' });
    const stored = storage.getItem(historyKey('a'))!;
    expect(stored).not.toContain('hunter2');
    expect(stored).not.toContain('r:abc');
    expect(readHistory(storage, 'b')).toHaveLength(1);
  });

  it(`keeps at most ${HISTORY_LIMIT} calls; clear empties one app's history`, () => {
    const storage = new MemoryStorage();
    for (let i = 0; i < HISTORY_LIMIT + 5; i++)
      addToHistory(storage, 'a', { ...call, path: `/classes/C${i}` });
    const entries = readHistory(storage, 'a');
    expect(entries).toHaveLength(HISTORY_LIMIT);
    expect(entries[0]!.call.path).toBe(`/classes/C${HISTORY_LIMIT + 4}`);
    addToHistory(storage, 'b', call);
    clearHistory(storage, 'a');
    expect(readHistory(storage, 'a')).toEqual([]);
    expect(readHistory(storage, 'b')).toHaveLength(1);
  });

  it('ignores stored text that is not a history', () => {
    const storage = new MemoryStorage();
    storage.setItem(historyKey('a'), '{not json');
    expect(readHistory(storage, 'a')).toEqual([]);
    storage.setItem(historyKey('a'), JSON.stringify([{ id: 'x' }, 42]));
    expect(readHistory(storage, 'a')).toEqual([]);
  });
});
