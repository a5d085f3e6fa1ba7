import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The console's row history through the bff (GET /bff/apps/<app>/history/<C>[/<id>[/at]], POST
 * .../<id>/revert {version}, POST .../<id>/restore): every console user reads; revert and restore
 * are changes (admins only), each an audit entry on the row. The console's own writes are recorded
 * under the console user's name. A version's rows are shown as the data browser shows rows (the
 * same functions): credentials hidden from everyone, secret-named fields from read-only users.
 * Real service, real bff.
 */

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
const A = '/bff/apps/test-app';
const H = `${A}/history`;
const READ_ONLY = { code: 119, error: 'Read-only console users cannot change anything.' };
let id = '';

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  const created = await admin.post(`${A}/classes/Note`, { title: 'first', apiKey: 'note-key-1' });
  expect(created.status, created.text).toBe(201);
  id = created.json.objectId;
  const edited = await admin.put(`${A}/classes/Note/${id}`, { title: 'second' });
  expect(edited.status, edited.text).toBe(200);
});

afterAll(async () => {
  await t?.close();
});

const auditOf = (action: string) => t.bff.ctx.audit.list({ action, limit: 1000 });
const versionsOf = async (user: BffFetch, objectId = id) => {
  const res = await user.get(`${H}/Note/${objectId}`);
  expect(res.status, res.text).toBe(200);
  return res.json.results as Array<Record<string, any>>;
};

describe('the history routes', () => {
  it("lists a row's versions newest first, the console's writes under the console user's name", async () => {
    const versions = await versionsOf(admin);
    expect(versions.map((v) => v.op)).toEqual(['update', 'create']);
    for (const v of versions) {
      expect(v.caller).toMatchObject({ kind: 'console', name: 'admin' });
      expect(v.source).toBe('console');
      expect(v.className).toBe('Note');
      expect(v.objectId).toBe(id);
    }
    expect(versions[0]!.before.title).toBe('first');
    expect(versions[0]!.after.title).toBe('second');
    expect(versions[1]!.before).toBeNull();
  });

  it('shows the rows of a version as the data browser shows the row, per role', async () => {
    for (const [user, key] of [
      [admin, 'note-key-1'],
      [viewer, '[FILTERED]'],
    ] as const) {
      const row = (await user.get(`${A}/classes/Note/${id}`)).json;
      expect(row.apiKey).toBe(key);
      const [latest] = await versionsOf(user);
      expect(latest!.after.apiKey).toBe(key);
      expect(latest!.before.apiKey).toBe(key);
    }
    // A user's credentials: hidden from every console user, in the row and in its history.
    const user = await admin.post(`${A}/users`, { username: 'hist-user', password: 'pw-1234' });
    expect(user.status, user.text).toBe(201);
    const login = await t.service.request('POST', '/login', {
      body: { username: 'hist-user', password: 'pw-1234' },
    });
    expect(login.status).toBe(200);
    const anon = await t.service.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'hist-anon-0123456789' } } },
    });
    expect(anon.status, anon.text).toBe(201);
    const anonId = anon.json.objectId as string;
    for (const who of [admin, viewer]) {
      const res = await who.get(`${H}/_User/${anonId}`);
      expect(res.status, res.text).toBe(200);
      expect(res.text).not.toContain('hist-anon-0123456789');
      expect(res.json.results[0].after.authData).toBe('[FILTERED]');
      expect((await who.get(`${A}/classes/_User/${anonId}`)).json.authData).toBe('[FILTERED]');
    }
  });

  it('lists the recent changes of a class, filtered by user, field, op and time', async () => {
    const all = await admin.get(`${H}/Note`);
    expect(all.status, all.text).toBe(200);
    expect(all.json.results.map((v: { op: string }) => v.op)).toEqual(['update', 'create']);
    const byAdmin = await viewer.get(`${H}/Note?user=admin&field=title&op=update`);
    expect(byAdmin.status, byAdmin.text).toBe(200);
    expect(byAdmin.json.results).toHaveLength(1);
    expect((await admin.get(`${H}/Note?user=someone-else`)).json.results).toEqual([]);
    expect((await admin.get(`${H}/Note?until=2000-01-01T00:00:00Z`)).json.results).toEqual([]);
    // A page at a time: the next one starts before the last version listed.
    const [newest] = all.json.results;
    const first = await admin.get(`${H}/Note?limit=1`);
    expect(first.json.results.map((v: { id: string }) => v.id)).toEqual([newest.id]);
    const next = await admin.get(`${H}/Note?limit=1&before=${encodeURIComponent(newest.id)}`);
    expect(next.json.results.map((v: { op: string }) => v.op)).toEqual(['create']);
    const rowNext = await admin.get(`${H}/Note/${id}?limit=1&before=${encodeURIComponent(newest.id)}`);
    expect(rowNext.json.results.map((v: { op: string }) => v.op)).toEqual(['create']);
    const since = encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString());
    expect((await admin.get(`${H}/Note?since=${since}`)).json.results).toHaveLength(2);
  });

  it('answers the row as it was at a time', async () => {
    const [update, create] = await versionsOf(admin);
    const at = await viewer.get(`${H}/Note/${id}/at?time=${encodeURIComponent(create!.time)}`);
    expect(at.status, at.text).toBe(200);
    expect(at.json.result.title).toBe(update!.time === create!.time ? 'second' : 'first');
    const before = await admin.get(`${H}/Note/${id}/at?time=2000-01-01T00:00:00.000Z`);
    expect(before.json).toEqual({ result: null });
  });

  it('refuses bad input with 107 naming it, before asking the service', async () => {
    for (const [path, error] of [
      [`${H}/Note/${id}?limit=0`, 'Invalid history query: limit: Too small: expected number to be >=1'],
      [`${H}/Note/${id}?limit=x`, 'Invalid history query: limit: must be a positive integer'],
      [`${H}/Note?since=yesterday`, 'Invalid history query: since: must be a date/time (ISO 8601)'],
      [
        `${H}/Note?field=a-b`,
        'Invalid history query: field: must be a field name (letters, digits, underscores)',
      ],
      [
        `${H}/Note?op=drop`,
        'Invalid history query: op: Invalid option: expected one of "create"|"update"|"delete"|"revert"|"restore"',
      ],
      [`${H}/Note?where=%7B%7D`, 'Invalid history query: Unrecognized key: "where"'],
      [
        `${H}/Note/${id}/at`,
        'Invalid history query: time: Invalid input: expected string, received undefined',
      ],
      [`${H}/bad-name`, 'Invalid class name: must be a class name (letters, digits, underscores)'],
    ] as const) {
      const res = await admin.get(path);
      expect(res.status, path).toBe(400);
      expect(res.json, path).toEqual({ code: 107, error });
    }
    const noVersion = await admin.post(`${H}/Note/${id}/revert`, {});
    expect(noVersion.status).toBe(400);
    expect(noVersion.json).toEqual({
      code: 107,
      error: 'Invalid revert: version: Invalid input: expected string, received undefined',
    });
    expect(auditOf('row.revert')).toEqual([]);
  });

  it('refuses a read-only user revert and restore with the code and text of every write route', async () => {
    const [, create] = await versionsOf(admin);
    const revert = await viewer.post(`${H}/Note/${id}/revert`, { version: create!.id });
    expect(revert.status).toBe(403);
    expect(revert.json).toEqual(READ_ONLY);
    const restore = await viewer.post(`${H}/Note/${id}/restore`, {});
    expect(restore.status).toBe(403);
    expect(restore.json).toEqual(READ_ONLY);
    expect((await admin.get(`${A}/classes/Note/${id}`)).json.title).toBe('second');
    expect((await versionsOf(admin)).map((v) => v.op)).toEqual(['update', 'create']);
    expect(auditOf('row.re')).toEqual([]);
  });

  it('reverts a row to a version, recorded as a revert by the console user and audited', async () => {
    const [, create] = await versionsOf(admin);
    const res = await admin.post(`${H}/Note/${id}/revert`, { version: create!.id });
    expect(res.status, res.text).toBe(200);
    expect(res.json.objectId).toBe(id);
    expect(typeof res.json.updatedAt).toBe('string');
    expect((await admin.get(`${A}/classes/Note/${id}`)).json.title).toBe('first');
    const [revert] = await versionsOf(admin);
    expect(revert).toMatchObject({
      op: 'revert',
      revertOf: create!.id,
      caller: { kind: 'console', name: 'admin' },
      source: 'console',
    });
    expect(revert!.before.title).toBe('second');
    expect(revert!.after.title).toBe('first');
    const [entry] = auditOf('row.revert');
    expect(entry).toMatchObject({ user: 'admin', app: 'test-app', target: `Note/${id}` });
    expect((entry!.before as { title: string }).title).toBe('second');
    expect((entry!.after as { title: string }).title).toBe('first');

    const unknown = await admin.post(`${H}/Note/${id}/revert`, { version: 'no-such-version' });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ code: 101, error: `No version no-such-version of Note ${id}.` });
    expect(auditOf('row.revert')).toHaveLength(1);
  });

  it('restores a deleted row (listed in the recent changes) with its last fields, audited', async () => {
    const exists = await admin.post(`${H}/Note/${id}/restore`, {});
    expect(exists.status).toBe(400);
    expect(exists.json).toEqual({
      code: 137,
      error: `Note ${id} exists: restore re-creates a deleted row (revert changes an existing one).`,
    });
    expect((await admin.delete(`${A}/classes/Note/${id}`)).status).toBe(200);
    const deleted = await admin.get(`${H}/Note?op=delete`);
    expect(deleted.json.results.map((v: { objectId: string }) => v.objectId)).toEqual([id]);
    const [deletion] = await versionsOf(admin);
    const revertDeleted = await admin.post(`${H}/Note/${id}/revert`, { version: deletion!.id });
    expect(revertDeleted.status).toBe(404);
    expect(revertDeleted.json).toEqual({ code: 101, error: 'Object not found.' });

    const res = await admin.post(`${H}/Note/${id}/restore`, {});
    expect(res.status, res.text).toBe(201);
    expect(res.json.objectId).toBe(id);
    expect(typeof res.json.createdAt).toBe('string');
    const row = (await admin.get(`${A}/classes/Note/${id}`)).json;
    expect(row).toMatchObject({ objectId: id, title: 'first', apiKey: 'note-key-1' });
    const [restore] = await versionsOf(admin);
    expect(restore).toMatchObject({ op: 'restore', caller: { kind: 'console', name: 'admin' } });
    const [entry] = auditOf('row.restore');
    expect(entry).toMatchObject({ user: 'admin', target: `Note/${id}`, before: null });
    expect((entry!.after as { title: string }).title).toBe('first');
  });
});
