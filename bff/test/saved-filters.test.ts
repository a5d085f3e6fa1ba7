import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FILTERS_FILE, openSavedFilters } from '../src/saved-filters.ts';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/** Saved filters are each console user's own until they share them. */
const F = '/bff/apps/test-app/classes/Item/filters';
let t: StartedBff;
let admin: BffFetch;
let other: BffFetch;
let viewer: BffFetch;

beforeAll(async () => {
  t = await startBff({
    users: [
      { username: 'admin', role: 'admin' },
      { username: 'other', role: 'admin' },
      { username: 'viewer', role: 'read-only' },
    ],
  });
  admin = await t.login('admin');
  other = await t.login('other');
  viewer = await t.login('viewer');
});
afterAll(async () => {
  await t?.close();
});

const names = async (who: BffFetch) =>
  ((await who.get(F)).json.results as Array<{ owner: string; name: string; shared: boolean }>).map(
    (f) => `${f.owner}:${f.name}:${f.shared ? 'shared' : 'own'}`,
  );

describe('saved filters per console user', () => {
  let mine: number;

  it('a saved filter is listed to its owner only', async () => {
    const saved = await admin.post(F, { name: 'recent', where: { n: { $gt: 1 } } });
    expect(saved.status).toBe(201);
    expect(saved.json).toMatchObject({ owner: 'admin', name: 'recent', shared: false });
    mine = saved.json.id;
    expect(await names(admin)).toEqual(['admin:recent:own']);
    expect(await names(other)).toEqual([]);
    expect(await names(viewer)).toEqual([]);
  });

  it('another user can neither share nor delete it, nor learn that it exists', async () => {
    for (const res of [
      await other.put(`${F}/${mine}`, { shared: true }),
      await other.delete(`${F}/${mine}`),
    ]) {
      expect(res).toMatchObject({
        status: 404,
        json: { code: 101, error: `No saved filter ${mine} on Item.` },
      });
    }
  });

  it('shared by its owner, every console user of the app sees it; only the owner unshares it', async () => {
    const shared = await admin.put(`${F}/${mine}`, { shared: true });
    expect(shared).toMatchObject({ status: 200, json: { id: mine, shared: true } });
    expect(await names(other)).toEqual(['admin:recent:shared']);
    expect(await names(viewer)).toEqual(['admin:recent:shared']);
    const refused = await other.put(`${F}/${mine}`, { shared: false });
    expect(refused).toMatchObject({
      status: 403,
      json: { code: 119, error: 'Only admin, who saved the filter "recent", may share it.' },
    });
    // Saving again under the name changes the condition and keeps the sharing.
    await admin.post(F, { name: 'recent', where: { n: { $gt: 2 } } });
    expect((await other.get(F)).json.results[0]).toMatchObject({ where: { n: { $gt: 2 } }, shared: true });
    await admin.put(`${F}/${mine}`, { shared: false });
    expect(await names(other)).toEqual([]);
  });

  it('refuses a bad share body, and read-only users cannot share', async () => {
    const bad = await admin.put(`${F}/${mine}`, { shared: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(107);
    expect(bad.json.error).toMatch(/^Invalid saved filter: /);
    const ro = await viewer.put(`${F}/${mine}`, { shared: true });
    expect(ro).toMatchObject({
      status: 403,
      json: { code: 119, error: 'Read-only console users cannot change anything.' },
    });
    expect(await names(admin)).toEqual(['admin:recent:own']);
  });
});

describe('filters saved before filters were per user', () => {
  it('stay every console user’s (migrated as shared)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-filters-'));
    try {
      const old = new Database(path.join(dir, FILTERS_FILE));
      old.exec(`CREATE TABLE saved_filter (
        id INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, class TEXT NOT NULL, owner TEXT NOT NULL,
        name TEXT NOT NULL, where_json TEXT NOT NULL, saved_at TEXT NOT NULL, UNIQUE (app, class, owner, name))`);
      old
        .prepare(
          'INSERT INTO saved_filter (app, class, owner, name, where_json, saved_at) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run('a', 'Item', 'ann', 'team', '{"n":1}', '2026-01-01T00:00:00.000Z');
      old.close();
      const store = openSavedFilters(dir);
      expect(store.list('a', 'Item', 'bob')).toEqual([
        {
          id: 1,
          className: 'Item',
          owner: 'ann',
          name: 'team',
          where: { n: 1 },
          savedAt: '2026-01-01T00:00:00.000Z',
          shared: true,
        },
      ]);
      const fresh = store.save('a', 'Item', 'ann', 'private', {});
      expect(fresh.shared).toBe(false);
      expect(store.list('a', 'Item', 'bob').map((f) => f.name)).toEqual(['team']);
      store.close();
      // Opening again changes nothing.
      const again = openSavedFilters(dir);
      expect(again.list('a', 'Item', 'ann').map((f) => [f.name, f.shared])).toEqual([
        ['private', false],
        ['team', true],
      ]);
      again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
