import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CacheableDriver, RowCache } from '../src/storage/sql/row-cache.ts';
import { startService, type TestService } from './helpers/service.ts';

/** A driver whose answers the test sets. */
function fakeDriver(): CacheableDriver & { uncommitted: boolean; elsewhere: boolean } {
  return {
    uncommitted: false,
    elsewhere: false,
    hasUncommittedWrites() {
      return this.uncommitted;
    },
    changedElsewhere() {
      const changed = this.elsewhere;
      this.elsewhere = false;
      return changed;
    },
  };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('RowCache', () => {
  it('keeps a row read outside writes and answers it', () => {
    const cache = new RowCache(fakeDriver(), 1 << 20);
    cache.add(cache.ticket(), 'Item', 'a', { objectId: 'a', n: 1 });
    expect(cache.get('Item', 'a')).toEqual({ objectId: 'a', n: 1 });
    expect(cache.get('Item', 'b')).toBeUndefined();
    expect(cache.get('Other', 'a')).toBeUndefined();
  });

  it('adds nothing while a write of this process is uncommitted', () => {
    const driver = fakeDriver();
    const cache = new RowCache(driver, 1 << 20);
    driver.uncommitted = true;
    cache.add(cache.ticket(), 'Item', 'a', { objectId: 'a' });
    expect(cache.size.rows).toBe(0);
  });

  it('refuses a copy read before a forget (a write and its commit landed during the read)', () => {
    const cache = new RowCache(fakeDriver(), 1 << 20);
    const ticket = cache.ticket();
    cache.forget('Item', 'other-row');
    cache.add(ticket, 'Item', 'a', { objectId: 'a', n: 'old' });
    expect(cache.get('Item', 'a')).toBeUndefined();
    cache.add(cache.ticket(), 'Item', 'a', { objectId: 'a', n: 'new' });
    expect(cache.get('Item', 'a')).toEqual({ objectId: 'a', n: 'new' });
  });

  it('forgets a row, a class, everything', () => {
    const cache = new RowCache(fakeDriver(), 1 << 20);
    for (const [c, id] of [
      ['Item', 'a'],
      ['Item', 'b'],
      ['Other', 'a'],
    ] as const) {
      cache.add(cache.ticket(), c, id, { objectId: id });
    }
    cache.forget('Item', 'a');
    expect(cache.get('Item', 'a')).toBeUndefined();
    expect(cache.get('Item', 'b')).toEqual({ objectId: 'b' });
    cache.forgetClass('Item');
    expect(cache.get('Item', 'b')).toBeUndefined();
    expect(cache.get('Other', 'a')).toEqual({ objectId: 'a' });
    cache.clear();
    expect(cache.size).toEqual({ rows: 0, bytes: 0 });
  });

  it('holds at most its memory, dropping the oldest rows first', () => {
    const cache = new RowCache(fakeDriver(), 1000);
    const row = (id: string) => ({ objectId: id, text: 'x'.repeat(200) });
    for (const id of ['a', 'b', 'c', 'd', 'e']) cache.add(cache.ticket(), 'Item', id, row(id));
    expect(cache.size.bytes).toBeLessThanOrEqual(1000);
    expect(cache.get('Item', 'a')).toBeUndefined();
    expect(cache.get('Item', 'e')).toEqual(row('e'));
    // A row larger than the whole cache is not kept.
    cache.add(cache.ticket(), 'Item', 'huge', { objectId: 'huge', text: 'x'.repeat(5000) });
    expect(cache.get('Item', 'huge')).toBeUndefined();
  });

  it('empties itself when another process committed (checked once per turn of the event loop)', async () => {
    const driver = fakeDriver();
    const cache = new RowCache(driver, 1 << 20);
    cache.add(cache.ticket(), 'Item', 'a', { objectId: 'a' });
    await nextTurn();
    driver.elsewhere = true;
    expect(cache.get('Item', 'a')).toBeUndefined();
  });
});

describe('reads by id with the row cache (embedded store)', () => {
  let t: TestService;
  let sqlReads = 0;
  let alice: { objectId: string; sessionToken: string };
  let bob: { objectId: string; sessionToken: string };

  beforeAll(async () => {
    t = await startService({ rowCacheMB: 8 });
    const driver = (t.service.core.store as unknown as { driver: { all: (...a: unknown[]) => unknown } })
      .driver;
    const all = driver.all.bind(driver);
    // Counts the reads that reach SQLite, to tell a cached answer from a fresh one.
    driver.all = (...args: unknown[]) => {
      sqlReads++;
      return all(...args);
    };
    const signUp = async (username: string) =>
      (await t.request('POST', '/users', { body: { username, password: 'pw-123456' } })).json;
    alice = await signUp('alice');
    bob = await signUp('bob');
  });
  afterAll(() => t.close());

  const create = async (body: Record<string, unknown>) =>
    (await t.request('POST', '/classes/Note', { as: 'master', body })).json.objectId as string;
  const get = (id: string, sessionToken?: string) =>
    t.request('GET', `/classes/Note/${id}`, sessionToken ? { sessionToken } : {});

  it('answers a second read from memory, the same as the first', async () => {
    const id = await create({ text: 'hello', n: 1 });
    const first = await get(id);
    const before = sqlReads;
    const second = await get(id);
    expect(sqlReads).toBe(before);
    expect(second.status).toBe(200);
    expect(second.json).toEqual(first.json);
  });

  it('answers the new state after an update, an ACL change and a delete', async () => {
    const id = await create({ text: 'v1', ACL: { [alice.objectId]: { read: true, write: true } } });
    expect((await get(id, alice.sessionToken)).json.text).toBe('v1');
    expect((await get(id, bob.sessionToken)).status).toBe(404);

    const put = await t.request('PUT', `/classes/Note/${id}`, {
      sessionToken: alice.sessionToken,
      body: { text: 'v2' },
    });
    expect(put.status).toBe(200);
    expect((await get(id, alice.sessionToken)).json.text).toBe('v2');

    await t.request('PUT', `/classes/Note/${id}`, {
      as: 'master',
      body: { ACL: { [bob.objectId]: { read: true } } },
    });
    const asAlice = await get(id, alice.sessionToken);
    expect(asAlice.status).toBe(404);
    expect(asAlice.json).toEqual({ code: 101, error: 'Object not found.' });
    expect((await get(id, bob.sessionToken)).json.text).toBe('v2');

    expect((await t.request('DELETE', `/classes/Note/${id}`, { as: 'master' })).status).toBe(200);
    expect((await get(id, bob.sessionToken)).json).toEqual({ code: 101, error: 'Object not found.' });
  });

  it('decides the ACL of a cached row for each caller (public, private, anonymous)', async () => {
    const id = await create({ text: 'private', ACL: { [alice.objectId]: { read: true } } });
    expect((await get(id, alice.sessionToken)).status).toBe(200);
    const before = sqlReads;
    expect((await get(id, alice.sessionToken)).status).toBe(200);
    expect(sqlReads).toBe(before);
    // The row is cached; other callers are still refused.
    expect((await get(id, bob.sessionToken)).status).toBe(404);
    expect((await get(id)).status).toBe(404);
  });

  it('answers writes made inside a batch transaction once it commits', async () => {
    const id = await create({ text: 'before batch' });
    await get(id);
    const batch = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        transaction: true,
        requests: [{ method: 'PUT', path: `/api/classes/Note/${id}`, body: { text: 'in batch' } }],
      },
    });
    expect(batch.status).toBe(200);
    expect((await get(id)).json.text).toBe('in batch');
  });

  it('never answers a dropped field re-added with another type from an old copy', async () => {
    const id = await create({ text: 'x', extra: 'old value' });
    expect((await get(id)).json.extra).toBe('old value');
    const drop = await t.request('PUT', '/schemas/Note', {
      as: 'master',
      body: { fields: { extra: { __op: 'Delete' } } },
    });
    expect(drop.status).toBe(200);
    const add = await t.request('PUT', '/schemas/Note', {
      as: 'master',
      body: { fields: { extra: { type: 'Number' } } },
    });
    expect(add.status).toBe(200);
    const after = await get(id);
    expect(after.status).toBe(200);
    expect(after.json.extra).toBeUndefined();
  });

  it('answers an empty class after a purge', async () => {
    const id = await create({ text: 'to purge' });
    await t.request('POST', '/schemas/Gone', {
      as: 'master',
      body: { fields: { text: { type: 'String' } } },
    });
    const gone = (await t.request('POST', '/classes/Gone', { as: 'master', body: { text: 'a' } })).json
      .objectId as string;
    expect((await t.request('GET', `/classes/Gone/${gone}`)).status).toBe(200);
    expect((await t.request('DELETE', '/purge/Gone', { as: 'master' })).status).toBe(200);
    expect((await t.request('GET', `/classes/Gone/${gone}`)).status).toBe(404);
    expect((await get(id)).status).toBe(200);
  });

  it('sees a commit made by another process on the same file', async () => {
    const id = await create({ text: 'mine' });
    expect((await get(id)).json.text).toBe('mine');
    const other = new Database(path.join(t.dataDir, 'data.sqlite'));
    try {
      other.pragma('busy_timeout = 5000');
      other.prepare('UPDATE "Note" SET text = ? WHERE objectId = ?').run('theirs', id);
    } finally {
      other.close();
    }
    await nextTurn();
    expect((await get(id)).json.text).toBe('theirs');
  });
});
