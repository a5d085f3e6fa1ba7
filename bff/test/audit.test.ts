import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_FILE, openAuditLog } from '../src/audit/index.ts';
import type { AuditEntry } from '../src/context.ts';
import { type BffFetch, findLeaks, type StartedBff, startBff } from './helpers/bff.ts';

describe('audit log (unit)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'bff-audit-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('records, filters, pages by id and survives a reopen', () => {
    const log = openAuditLog(dir);
    for (let i = 0; i < 5; i++) {
      log.record({
        user: i % 2 ? 'bob' : 'ann',
        app: 'a1',
        action: 'row.update',
        target: `C/id${i}`,
        before: { i },
        after: { i: i + 1 },
      });
    }
    log.record({
      user: 'ann',
      app: 'a2',
      action: 'config.update',
      target: 'config',
      before: null,
      after: { x: 1 },
    });
    log.record({ user: 'ann', app: 'a2', action: 'schema.addField', target: 'C.f', before: null, after: {} });
    const all = log.list({});
    expect(all.map((e) => e.id)).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(all[6]).toMatchObject({
      user: 'ann',
      app: 'a1',
      action: 'row.update',
      target: 'C/id0',
      before: { i: 0 },
      after: { i: 1 },
    });
    expect(all[6]!.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(log.list({ app: 'a2' })).toHaveLength(2);
    expect(log.list({ user: 'bob' }).map((e) => e.target)).toEqual(['C/id3', 'C/id1']);
    expect(log.list({ action: 'row' })).toHaveLength(5);
    expect(log.list({ action: 'row.update' })).toHaveLength(5);
    expect(log.list({ action: 'ro' })).toHaveLength(0);
    expect(log.list({ target: 'C' })).toHaveLength(6);
    expect(log.list({ target: 'C.f' })).toHaveLength(1);
    expect(log.list({ target: 'C/id2' })).toHaveLength(1);
    expect(log.list({ target: 'C/id%' })).toHaveLength(0);
    const page1 = log.list({ limit: 2 });
    const page2 = log.list({ limit: 2, before: page1[1]!.id });
    expect([...page1, ...page2].map((e) => e.id)).toEqual([7, 6, 5, 4]);
    expect(log.list({ since: '2999-01-01T00:00:00.000Z' })).toEqual([]);
    expect(log.list({ until: '2000-01-01T00:00:00.000Z' })).toEqual([]);
    expect(log.list({ since: all[6]!.at, until: all[0]!.at })).toHaveLength(7);
    log.close();
    const again = openAuditLog(dir);
    expect(again.list({})).toHaveLength(7);
    again.close();
  });

  it('an action word without a dot also finds its plural or singular: "row" finds rows.import', () => {
    const log = openAuditLog(path.join(dir, 'words'));
    for (const action of [
      'row.create',
      'rows.import',
      'rows.bulkDelete',
      'rowsy.x',
      'role.create',
      'schema.addField',
    ])
      log.record({ user: 'ann', app: 'a1', action, target: 'C', before: null, after: null });
    const actions = (action: string) =>
      log
        .list({ action })
        .map((e) => e.action)
        .sort();
    expect(actions('row')).toEqual(['row.create', 'rows.bulkDelete', 'rows.import']);
    expect(actions('rows')).toEqual(['row.create', 'rows.bulkDelete', 'rows.import']);
    expect(actions('rows.import')).toEqual(['rows.import']);
    expect(actions('row.create')).toEqual(['row.create']);
    expect(actions('schemas')).toEqual(['schema.addField']);
    expect(actions('ro')).toEqual([]);
    expect(actions('row%')).toEqual([]);
    log.close();
  });

  it('scrubs credentials from before/after', () => {
    const log = openAuditLog(dir);
    log.record({
      user: 'ann',
      app: 'a1',
      action: 'session.revoke',
      target: '_Session/x',
      before: { sessionToken: 'r:abc', user: 'u' },
      after: null,
    });
    const [e] = log.list({ action: 'session.revoke' });
    expect(e!.before).toEqual({ sessionToken: '[FILTERED]', user: 'u' });
    expect(e!.after).toBeNull();
    log.close();
  });

  it('is append-only: UPDATE and DELETE abort, even on a raw connection', () => {
    const log = openAuditLog(dir);
    log.record({
      user: 'ann',
      app: 'a1',
      action: 'row.create',
      target: 'C/z',
      before: null,
      after: { z: 1 },
    });
    const count = log.list({ limit: 1000 }).length;
    const db = new Database(path.join(dir, AUDIT_FILE));
    try {
      expect(() => db.prepare("UPDATE audit SET user = 'mallory'").run()).toThrow(/append-only/);
      expect(() => db.prepare('DELETE FROM audit').run()).toThrow(/append-only/);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
    }
    expect(log.list({ limit: 1000 })).toHaveLength(count);
    expect(log.list({ user: 'mallory' })).toEqual([]);
    expect(Object.keys(log).sort()).toEqual(['close', 'list', 'record']);
    log.close();
  });
});

describe('audit log over HTTP', () => {
  let t: StartedBff;
  let admin: BffFetch;
  const A = '/bff/apps/test-app';

  beforeAll(async () => {
    t = await startBff();
    admin = await t.login('admin');
  });
  afterAll(async () => {
    await t?.close();
  });

  const latest = async (action: string): Promise<AuditEntry> => {
    const res = await admin.get(`/bff/audit?action=${encodeURIComponent(action)}&limit=1`);
    expect(res.status).toBe(200);
    const [e] = res.json.results as AuditEntry[];
    if (!e) throw new Error(`no audit entry for ${action}`);
    expect(e.user).toBe('admin');
    expect(e.app).toBe('test-app');
    expect(Number.isNaN(Date.parse(e.at))).toBe(false);
    return e;
  };
  const ok = <R extends { status: number; text: string }>(res: R): R => {
    if (res.status >= 300) throw new Error(`${res.status} ${res.text}`);
    return res;
  };

  it('records each kind of change with before/after values', async () => {
    ok(await admin.post(`${A}/schemas`, { className: 'Doc', fields: { n: { type: 'Number' } } }));
    let e = await latest('schema.create');
    expect(e.target).toBe('Doc');
    expect(e.before).toBeNull();
    expect((e.after as any).fields.n).toEqual({ type: 'Number' });

    ok(await admin.post(`${A}/schemas/Doc/fields`, { name: 'tag', type: 'String' }));
    e = await latest('schema.addField');
    expect(e).toMatchObject({ target: 'Doc.tag', before: null, after: { type: 'String' } });

    ok(await admin.post(`${A}/schemas/Doc/indexes`, { name: 'by_n', keys: { n: 1 } }));
    e = await latest('schema.addIndex');
    expect(e).toMatchObject({ target: 'Doc.by_n', before: null, after: { n: 1 } });
    ok(await admin.delete(`${A}/schemas/Doc/indexes/by_n`));
    e = await latest('schema.deleteIndex');
    expect(e).toMatchObject({ target: 'Doc.by_n', before: { n: 1 }, after: null });

    const clp = { find: { '*': true }, get: { '*': true }, create: {}, update: {}, delete: {} };
    ok(await admin.put(`${A}/schemas/Doc/clp`, { classLevelPermissions: clp }));
    e = await latest('schema.clp');
    expect((e.before as any).create).toEqual({ '*': true });
    expect((e.after as any).create).toEqual({});

    const id = ok(await admin.post(`${A}/classes/Doc`, { n: 1, tag: 'a' })).json.objectId as string;
    e = await latest('row.create');
    expect(e.target).toBe(`Doc/${id}`);
    expect(e.after).toMatchObject({ objectId: id, n: 1, tag: 'a' });

    ok(await admin.put(`${A}/classes/Doc/${id}`, { n: 2 }));
    e = await latest('row.update');
    expect(e.before).toMatchObject({ n: 1 });
    expect(e.after).toMatchObject({ n: 2 });

    ok(await admin.put(`${A}/classes/Doc/${id}/acl`, { ACL: { '*': { read: true } } }));
    e = await latest('row.acl');
    expect(e.after).toEqual({ ACL: { '*': { read: true } } });

    const id2 = ok(await admin.post(`${A}/classes/Doc`, { n: 5 })).json.objectId as string;
    ok(await admin.post(`${A}/classes/Doc/bulk/update`, { objectIds: [id, id2], field: 'n', value: 9 }));
    e = await latest('rows.bulkUpdate');
    expect(e.target).toBe('Doc');
    expect(e.before).toEqual({ field: 'n', values: { [id]: 2, [id2]: 5 } });
    expect(e.after).toMatchObject({ field: 'n', value: 9, succeeded: 2, failed: 0 });

    ok(await admin.post(`${A}/classes/Doc/bulk/delete`, { objectIds: [id2] }));
    e = await latest('rows.bulkDelete');
    expect((e.before as any).rows[0]).toMatchObject({ objectId: id2, n: 9 });
    expect(e.after).toMatchObject({ succeeded: 1 });

    ok(await admin.delete(`${A}/classes/Doc/${id}`));
    e = await latest('row.delete');
    expect(e).toMatchObject({ target: `Doc/${id}`, before: { n: 9 }, after: null });

    ok(await admin.delete(`${A}/schemas/Doc/fields/tag`));
    e = await latest('schema.deleteField');
    expect(e).toMatchObject({ before: { type: 'String' }, after: null });
    ok(await admin.delete(`${A}/schemas/Doc`));
    e = await latest('schema.delete');
    expect(e).toMatchObject({ target: 'Doc', after: null });
    expect((e.before as any).className).toBe('Doc');

    const uid = ok(await admin.post(`${A}/users`, { username: 'carol', password: 'carol-pw' })).json.objectId;
    e = await latest('user.create');
    expect(e.after).toMatchObject({ objectId: uid, username: 'carol' });
    expect(JSON.stringify(e)).not.toContain('carol-pw');
    ok(await admin.put(`${A}/users/${uid}`, { email: 'carol@example.com' }));
    e = await latest('user.update');
    expect((e.before as any).email).toBeUndefined();
    expect((e.after as any).email).toBe('carol@example.com');

    ok(await t.service.request('POST', '/login', { body: { username: 'carol', password: 'carol-pw' } }));
    const sid = (await admin.get(`${A}/sessions?user=${uid}`)).json.results[0].objectId;
    ok(await admin.delete(`${A}/sessions/${sid}`));
    e = await latest('session.revoke');
    expect(e.target).toBe(`_Session/${sid}`);
    expect((e.before as any).sessionToken).toBe('[FILTERED]');

    const rid = ok(await admin.post(`${A}/roles`, { name: 'Editors' })).json.objectId;
    e = await latest('role.create');
    expect(e.after).toMatchObject({ name: 'Editors' });
    const rid2 = ok(await admin.post(`${A}/roles`, { name: 'Chiefs' })).json.objectId;
    ok(await admin.post(`${A}/roles/${rid}/users`, { userIds: [uid] }));
    e = await latest('role.addUsers');
    expect(e).toMatchObject({ target: `_Role/${rid}`, before: { users: [] }, after: { users: [uid] } });
    ok(await admin.post(`${A}/roles/${rid}/roles`, { roleIds: [rid2] }));
    e = await latest('role.addRoles');
    expect(e).toMatchObject({ before: { roles: [] }, after: { roles: [rid2] } });
    ok(await admin.delete(`${A}/roles/${rid}/roles/${rid2}`));
    e = await latest('role.removeRole');
    expect(e).toMatchObject({ before: { roles: [rid2] }, after: { roles: [] } });
    ok(await admin.delete(`${A}/roles/${rid}/users/${uid}`));
    e = await latest('role.removeUser');
    expect(e).toMatchObject({ before: { users: [uid] }, after: { users: [] } });
    ok(await admin.delete(`${A}/roles/${rid2}`));
    e = await latest('role.delete');
    expect((e.before as any).role.name).toBe('Chiefs');

    ok(await admin.delete(`${A}/users/${uid}`));
    e = await latest('user.delete');
    expect(e.before).toMatchObject({ username: 'carol', email: 'carol@example.com' });

    ok(await admin.put(`${A}/config`, { params: { a: 1 } }));
    ok(await admin.put(`${A}/config`, { params: { a: 2, b: 'x' }, masterKeyOnly: { b: true } }));
    e = await latest('config.update');
    expect(e).toMatchObject({
      target: 'config',
      before: { params: { a: 1 }, masterKeyOnly: {} },
      after: { params: { a: 2, b: 'x' }, masterKeyOnly: { b: true } },
    });

    ok(await admin.post(`${A}/console`, { method: 'PUT', path: '/config', body: { params: { c: 3 } } }));
    e = await latest('console.request');
    expect(e).toMatchObject({
      target: 'PUT /config',
      before: { body: { params: { c: 3 } } },
      after: { status: 200, body: { result: true } },
    });
  });

  it('does not record reads, refused writes, or GET console calls', async () => {
    const before = (await admin.get('/bff/audit?limit=1000')).json.results.length;
    await admin.get(`${A}/classes/_User`);
    await admin.post(`${A}/console`, { method: 'GET', path: '/config' });
    await admin.post(`${A}/classes/NoSuchClass`, { x: 'not a valid write' }, { headers: {} });
    await admin.put(`${A}/classes/_User/missing123`, { x: 1 });
    const viewer = await t.login('viewer');
    await viewer.put(`${A}/config`, { params: { hacked: true } });
    const after = (await admin.get('/bff/audit?limit=1000')).json.results;
    // POST /classes/NoSuchClass with the master key creates the class: that is a change, and it is recorded.
    expect(after.length - before).toBeLessThanOrEqual(1);
    expect(after.every((e: AuditEntry) => e.action !== 'config.update' || e.user === 'admin')).toBe(true);
  });

  it('filters and pages through GET /bff/audit', async () => {
    const all = (await admin.get('/bff/audit?limit=1000')).json.results as AuditEntry[];
    expect(all.length).toBeGreaterThan(20);
    const ids = all.map((e) => e.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);

    const seen: number[] = [];
    let next: number | null = null;
    do {
      const res = await admin.get(`/bff/audit?limit=7${next ? `&before=${next}` : ''}`);
      seen.push(...res.json.results.map((e: AuditEntry) => e.id));
      next = res.json.next;
    } while (next);
    expect(seen).toEqual(ids);

    const roles = (await admin.get('/bff/audit?action=role')).json.results as AuditEntry[];
    expect(roles.length).toBe(7);
    expect(roles.every((e) => e.action.startsWith('role.'))).toBe(true);
    expect(
      (await admin.get('/bff/audit?target=Doc')).json.results.every((e: AuditEntry) =>
        e.target.startsWith('Doc'),
      ),
    ).toBe(true);
    expect((await admin.get('/bff/audit?user=admin&app=test-app')).json.results.length).toBe(
      Math.min(all.length, 100),
    );
    expect((await admin.get('/bff/audit?user=nobody')).json.results).toEqual([]);
    const oldest = all.at(-1)!;
    const since = (await admin.get(`/bff/audit?since=${encodeURIComponent(oldest.at)}&limit=1000`)).json
      .results;
    expect(since).toHaveLength(all.length);
    expect(
      (await admin.get(`/bff/audit?until=${encodeURIComponent('2000-01-01T00:00:00Z')}`)).json.results,
    ).toEqual([]);
    expect((await admin.get('/bff/audit?limit=0')).status).toBe(400);
    expect((await admin.get('/bff/audit?before=abc')).status).toBe(400);
  });

  it('no route edits the audit log', async () => {
    const count = (await admin.get('/bff/audit?limit=1000')).json.results.length;
    const id = (await admin.get('/bff/audit?limit=1')).json.results[0].id;
    for (const [method, p] of [
      ['POST', '/bff/audit'],
      ['PUT', '/bff/audit'],
      ['DELETE', '/bff/audit'],
      ['PUT', `/bff/audit/${id}`],
      ['PATCH', `/bff/audit/${id}`],
      ['DELETE', `/bff/audit/${id}`],
    ] as const) {
      const res = await admin(p, { method, body: method === 'DELETE' ? undefined : { user: 'mallory' } });
      expect(res.status, `${method} ${p}`).toBe(404);
    }
    expect((await admin.get('/bff/audit?limit=1000')).json.results).toHaveLength(count);
  });

  it('no key in any response', () => {
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
