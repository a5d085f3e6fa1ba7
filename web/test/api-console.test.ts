import { describe, expect, it } from 'vitest';
import { type ApiCall, parseBody, parseObject, queryString } from '../src/features/api-console/lib/call.ts';
import { toCurl } from '../src/features/api-console/lib/curl.ts';
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

const SERVICE = 'https://data.example.com/api';

describe('copy as curl', () => {
  it('as master: the master key is the $MASTER_KEY placeholder, the query is encoded', () => {
    const call: ApiCall = {
      method: 'GET',
      path: '/classes/Post',
      query: { where: { title: "it's" }, limit: 10 },
      as: { kind: 'master' },
    };
    expect(toCurl(`${SERVICE}/`, call)).toBe(
      [
        `curl -X GET 'https://data.example.com/api/classes/Post?where=%7B%22title%22%3A%22it%27s%22%7D&limit=10'`,
        '-H "X-Backend-Application-Id: $APPLICATION_ID"',
        '-H "X-Backend-Master-Key: $MASTER_KEY"',
      ].join(' \\\n  '),
    );
  });

  it('as a user: the REST key and a placeholder session token; the body is single-quoted', () => {
    const call: ApiCall = {
      method: 'POST',
      path: '/classes/Post',
      query: {},
      body: { title: "Ann's post" },
      as: { kind: 'user', userId: 'u1', username: 'ann' },
    };
    expect(toCurl(SERVICE, call)).toBe(
      [
        `curl -X POST 'https://data.example.com/api/classes/Post'`,
        '-H "X-Backend-Application-Id: $APPLICATION_ID"',
        '-H "X-Backend-REST-API-Key: $REST_API_KEY"',
        '-H "X-Backend-Session-Token: $SESSION_TOKEN"',
        '-H "Content-Type: application/json"',
        `--data-raw '{"title":"Ann'\\''s post"}'`,
      ].join(' \\\n  '),
    );
  });

  it('as anonymous: the REST key only', () => {
    const text = toCurl(SERVICE, {
      method: 'DELETE',
      path: '/classes/Post/x',
      query: {},
      as: { kind: 'anonymous' },
    });
    expect(text).toContain('-H "X-Backend-REST-API-Key: $REST_API_KEY"');
    expect(text).not.toContain('Master');
    expect(text).not.toContain('Session');
  });
});

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

  it('query string: strings as they are, the rest as JSON', () => {
    expect(queryString({ keys: 'title', count: 1, where: { a: 1 } })).toBe(
      'keys=title&count=1&where=%7B%22a%22%3A1%7D',
    );
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
