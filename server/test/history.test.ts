import { CONSOLE_USER_HEADER } from '@bds/client/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER } from '../src/kernel/caller.ts';
import { ctxOf } from '../src/kernel/context.ts';
import type { SqlDriver } from '../src/storage/sql/driver.ts';
import { FakeClock } from './helpers/clock.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { LiveClient } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/** The row history (docs/protocol.md#row-history): versions, filters, revert, restore, retention. */

let t: TestService;
let ada: { objectId: string; sessionToken: string };

const MASTER_ONLY = { code: 119, error: 'unauthorized: master key is required' };
const CONSOLE = { [CONSOLE_USER_HEADER]: 'grace@console' };

async function rowHistory(className: string, objectId: string, query: Record<string, string> = {}) {
  const res = await t.request('GET', `/history/${className}/${objectId}`, { as: 'master', query });
  expect(res.status, res.text).toBe(200);
  return res.json.results as Array<Record<string, any>>;
}

async function create(className: string, body: Record<string, unknown>, headers?: Record<string, string>) {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body, headers });
  expect(res.status, res.text).toBe(201);
  return res.json.objectId as string;
}

async function update(className: string, objectId: string, body: Record<string, unknown>) {
  const res = await t.request('PUT', `/classes/${className}/${objectId}`, { as: 'master', body });
  expect(res.status, res.text).toBe(200);
  return res.json.updatedAt as string;
}

beforeAll(async () => {
  t = await startService({ cloud: CLOUD_MODULE, allowClientClassCreation: true });
  ada = (await t.request('POST', '/users', { body: { username: 'ada', password: 'pw-ada-1' } })).json;
});
afterAll(() => t?.close());

describe('versions of a row', () => {
  it('create, update and delete each leave a version: rows before and after, caller, source, ids', async () => {
    const created = await t.request('POST', '/classes/Post', { as: 'master', body: { title: 'one', n: 1 } });
    const id = created.json.objectId as string;
    const updatedAt = await update('Post', id, { title: 'two', n: { __op: 'Increment', amount: 1 } });
    const del = await t.request('DELETE', `/classes/Post/${id}`, { as: 'master' });
    expect(del.status).toBe(200);
    const [d, u, c] = await rowHistory('Post', id);
    const createdRow = {
      objectId: id,
      createdAt: created.json.createdAt,
      updatedAt: created.json.createdAt,
      title: 'one',
      n: 1,
    };
    const updatedRow = { ...createdRow, updatedAt, title: 'two', n: 2 };
    expect(c).toEqual({
      id: expect.stringMatching(/^\d+$/),
      className: 'Post',
      objectId: id,
      op: 'create',
      time: created.json.createdAt,
      before: null,
      after: createdRow,
      caller: { kind: 'master' },
      source: 'rest',
      eventId: expect.stringMatching(/^[A-Za-z0-9]{16}$/),
      requestId: created.headers.get('x-request-id'),
    });
    expect(u).toMatchObject({ op: 'update', time: updatedAt, before: createdRow, after: updatedRow });
    expect(d).toMatchObject({ op: 'delete', before: updatedRow, after: null, source: 'rest' });
    expect(Number(d!.id)).toBeGreaterThan(Number(u!.id));
    expect(Number(u!.id)).toBeGreaterThan(Number(c!.id));
    // Deleted rows keep their history; a row that never existed has none.
    expect(await rowHistory('Post', 'neverThere')).toEqual([]);
  });

  it("an update's version stores of the row before only what the write changed, and answers the whole row", async () => {
    const body = 'x'.repeat(2000);
    const created = await t.request('POST', '/classes/Post', {
      as: 'master',
      body: { title: 'long', body, n: 1 },
    });
    const id = created.json.objectId as string;
    const updatedAt = await update('Post', id, { n: { __op: 'Increment', amount: 1 }, gone: 'new' });
    const [u] = await rowHistory('Post', id);
    const createdRow = {
      objectId: id,
      createdAt: created.json.createdAt,
      updatedAt: created.json.createdAt,
      title: 'long',
      body,
      n: 1,
    };
    expect(u!.before).toEqual(createdRow);
    expect(u!.after).toEqual({ ...createdRow, updatedAt, n: 2, gone: 'new' });
    const driver = (t.service.core.store as unknown as { driver: SqlDriver }).driver;
    const stored = await driver.get(
      `SELECT "before", "fields" FROM "_History" WHERE "id" = ${Number(u!.id)}`,
      [],
    );
    expect({ before: JSON.parse(String(stored!.before)), fields: stored!.fields }).toEqual({
      before: { updatedAt: created.json.createdAt, n: 1 },
      fields: ',n,gone,',
    });
  });

  it("a version is written in its write's own unit: when it cannot be, the write fails with it", async () => {
    // Its failures are the point: not logged.
    const broken = await startService({ logLevel: 'silent' });
    try {
      const id = (await broken.request('POST', '/classes/Atomic', { as: 'master', body: { n: 1 } })).json
        .objectId;
      const driver = (broken.service.core.store as unknown as { driver: SqlDriver }).driver;
      await driver.exec(`DROP TABLE ${driver.dialect.quote('_History')}`);
      const writes: Array<[string, string, unknown]> = [
        ['POST', '/classes/Atomic', { n: 2 }],
        ['PUT', `/classes/Atomic/${id}`, { n: 3 }],
        ['DELETE', `/classes/Atomic/${id}`, undefined],
      ];
      for (const [method, path, body] of writes) {
        const res = await broken.request(method, path, { as: 'master', body });
        expect(res.status, `${method} ${path}`).toBe(500);
        expect(res.json).toEqual({ code: 1, error: 'Internal server error.' });
      }
      const rows = await broken.request('GET', '/classes/Atomic', { as: 'master' });
      expect(rows.json.results.map((r: { n: number }) => r.n)).toEqual([1]);
    } finally {
      await broken.close();
    }
  });

  it('a write with relations (a transaction of its own) leaves its version in it', async () => {
    const linked = await create('Linked', {
      friends: {
        __op: 'AddRelation',
        objects: [{ __type: 'Pointer', className: '_User', objectId: ada.objectId }],
      },
    });
    const [version] = await rowHistory('Linked', linked);
    expect(version).toMatchObject({
      op: 'create',
      after: { friends: { __type: 'Relation', className: '_User' } },
    });
  });

  it('concurrent creates (one group commit, one statement for their rows) leave one version each', async () => {
    const bodies = Array.from({ length: 20 }, (_, n) => ({
      n,
      objectId: `burst${String(n).padStart(5, '0')}`,
    }));
    // The last one takes an objectId already taken: refused, and no version.
    bodies.push({ n: 99, objectId: 'burst00000' });
    const answers = await Promise.all(
      bodies.map((body) => t.request('POST', '/classes/Burst', { as: 'master', body })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(20).fill(201), 400]);
    const versions = (await t.request('GET', '/history/Burst', { as: 'master' })).json.results;
    expect(
      versions.map((v: { objectId: string; after: { n: number } }) => `${v.objectId} ${v.after.n}`).sort(),
    ).toEqual(bodies.slice(0, 20).map((b) => `${b.objectId} ${b.n}`));
  });

  it('pages newest first with limit and before', async () => {
    const id = await create('Paged', { n: 0 });
    for (let n = 1; n <= 4; n++) await update('Paged', id, { n });
    const all = await rowHistory('Paged', id);
    expect(all.map((v) => v.after.n)).toEqual([4, 3, 2, 1, 0]);
    const first = await rowHistory('Paged', id, { limit: '2' });
    expect(first.map((v) => v.after.n)).toEqual([4, 3]);
    const next = await rowHistory('Paged', id, { limit: '2', before: first[1]!.id });
    expect(next.map((v) => v.after.n)).toEqual([2, 1]);
  });

  it('the row as it was at a time; null before it existed', async () => {
    const id = await create('Timed', { v: 'first' });
    const [created] = await rowHistory('Timed', id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const updatedAt = await update('Timed', id, { v: 'second' });
    const at = (time: string) =>
      t.request('GET', `/history/Timed/${id}/at`, { as: 'master', query: { time } });
    expect((await at(created!.time)).json).toEqual({ result: created!.after });
    expect((await at(updatedAt)).json.result.v).toBe('second');
    const before = new Date(Date.parse(created!.time) - 1000).toISOString();
    expect((await at(before)).json).toEqual({ result: null });
  });

  it('a _User version keeps neither password nor auth tokens', async () => {
    const [signUp] = await rowHistory('_User', ada.objectId);
    expect(signUp).toMatchObject({ op: 'create', source: 'account', caller: { kind: 'anonymous' } });
    expect(Object.keys(signUp!.after).sort()).toEqual([
      'ACL',
      'createdAt',
      'objectId',
      'updatedAt',
      'username',
    ]);
    expect(JSON.stringify(await rowHistory('_User', ada.objectId))).not.toContain('pw-ada-1');
    // Sessions (their tokens) are never recorded.
    const session = await t.request('GET', '/sessions/me', { sessionToken: ada.sessionToken });
    expect(await rowHistory('_Session', session.json.objectId)).toEqual([]);
  });

  it('bad parameters answer 102 and the reason', async () => {
    const cases: Array<[string, Record<string, string>, string]> = [
      ['/history/Post/x', { limit: '0' }, 'limit must be a whole number from 1 to 1000.'],
      ['/history/Post', { limit: 'lots' }, 'limit must be a whole number from 1 to 1000.'],
      [
        '/history/Post',
        { since: 'yesterday' },
        'since must be an ISO 8601 date, e.g. 2026-11-29T15:00:00.000Z.',
      ],
      ['/history/Post', { op: 'purge' }, 'op must be one of create, update, delete, revert, restore.'],
      ['/history/Post/x/at', {}, 'time is required: an ISO 8601 date.'],
    ];
    for (const [path, query, error] of cases) {
      const res = await t.request('GET', path, { as: 'master', query });
      expect(res.status, path).toBe(400);
      expect(res.json, path).toEqual({ code: 102, error });
    }
    const reserved = await t.request('GET', '/classes/_History', { as: 'master' });
    expect(reserved.status).toBe(400);
    expect(reserved.json).toEqual({
      code: 103,
      error: 'Invalid class name: "_History". The name _History is reserved.',
    });
  });
});

describe('who and where', () => {
  it('batch members, cloud code, imports, console calls and users are each recorded as such', async () => {
    const batch = await t.request('POST', '/batch', {
      as: 'master',
      body: { requests: [{ method: 'POST', path: '/classes/Note', body: { title: 'batched' } }] },
    });
    const asMaster = await t.request('POST', '/functions/createNoteAsMaster', {
      sessionToken: ada.sessionToken,
      body: { title: 'cloud master' },
    });
    const asCaller = await t.request('POST', '/functions/createNote', {
      sessionToken: ada.sessionToken,
      body: { title: 'cloud caller' },
    });
    const byUser = await t.request('POST', '/classes/Note', {
      sessionToken: ada.sessionToken,
      body: { title: 'by ada' },
    });
    await t.service.data.writes.restore(ctxOf(MASTER, 'import'), 'Note', {
      objectId: 'imported01',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-02T00:00:00.000Z',
      title: 'imported',
    });
    const viaConsole = await create('Note', { title: 'from the console' }, CONSOLE);
    // A non-master caller cannot sign its writes as the console's: the header is ignored.
    const forged = await t.request('POST', '/classes/Note', {
      sessionToken: ada.sessionToken,
      body: { title: 'forged' },
      headers: CONSOLE,
    });
    const cases: Array<[string, string, Record<string, unknown>]> = [
      ['batch', batch.json[0].success.objectId, { source: 'batch', caller: { kind: 'master' } }],
      ['cloud as master', asMaster.json.result.objectId, { source: 'cloud', caller: { kind: 'cloud' } }],
      [
        'cloud as the caller',
        asCaller.json.result.objectId,
        { source: 'cloud', caller: { kind: 'cloud', userId: ada.objectId } },
      ],
      ['a user', byUser.json.objectId, { source: 'rest', caller: { kind: 'user', userId: ada.objectId } }],
      ['an import', 'imported01', { source: 'import', caller: { kind: 'master' } }],
      ['the console', viaConsole, { source: 'console', caller: { kind: 'console', name: 'grace@console' } }],
      [
        'a forged console header',
        forged.json.objectId,
        { source: 'rest', caller: { kind: 'user', userId: ada.objectId } },
      ],
    ];
    for (const [what, id, expected] of cases) {
      const versions = await rowHistory('Note', id);
      expect(versions.length, what).toBe(1);
      expect(versions[0]!.op, what).toBe('create');
      expect({ source: versions[0]!.source, caller: versions[0]!.caller }, what).toEqual(expected);
    }
  });

  it("the account routes' writes keep the console's name and the request id", async () => {
    const signUp = await t.request('POST', '/users', {
      as: 'master',
      headers: CONSOLE,
      body: { username: 'linus', password: 'pw-linus-1' },
    });
    expect(signUp.status, signUp.text).toBe(201);
    const id = signUp.json.objectId as string;
    const edit = await t.request('PUT', `/users/${id}`, {
      as: 'master',
      headers: CONSOLE,
      body: { emailVerified: true },
    });
    expect(edit.status, edit.text).toBe(200);
    const del = await t.request('DELETE', `/users/${id}`, { as: 'master', headers: CONSOLE });
    expect(del.status, del.text).toBe(200);
    const versions = await rowHistory('_User', id);
    expect(versions.map((v) => [v.op, v.source, v.caller, v.requestId])).toEqual(
      [del, edit, signUp].map((res, i) => [
        ['delete', 'update', 'create'][i],
        'console',
        { kind: 'console', name: 'grace@console' },
        res.headers.get('x-request-id'),
      ]),
    );
  });

  it("a class's recent changes, filtered by user, field, op and time", async () => {
    const a = await create('Feed', { title: 'a', n: 1 });
    const b = await create('Feed', { title: 'b' }, CONSOLE);
    await update('Feed', a, { n: 2 });
    const del = await t.request('DELETE', `/classes/Feed/${b}`, { as: 'master', headers: CONSOLE });
    expect(del.status).toBe(200);
    const list = async (query: Record<string, string>) => {
      const res = await t.request('GET', '/history/Feed', { as: 'master', query });
      expect(res.status, res.text).toBe(200);
      return (res.json.results as Array<Record<string, any>>).map(
        (v) => `${v.op} ${v.objectId === a ? 'a' : 'b'}`,
      );
    };
    expect(await list({})).toEqual(['delete b', 'update a', 'create b', 'create a']);
    expect(await list({ user: 'grace@console' })).toEqual(['delete b', 'create b']);
    expect(await list({ field: 'n' })).toEqual(['update a', 'create a']);
    expect(await list({ op: 'delete' })).toEqual(['delete b']);
    expect(await list({ limit: '1' })).toEqual(['delete b']);
    const all = (await t.request('GET', '/history/Feed', { as: 'master' })).json.results;
    expect(await list({ since: all[1].time, until: all[1].time })).toEqual(['update a']);
    expect(await list({ until: '2000-01-01T00:00:00.000Z' })).toEqual([]);
  });
});

describe('revert and restore', () => {
  it('revert: the fields of a version, as an update through the pipeline, recorded with what it reverted to', async () => {
    const id = await create('Doc', { title: 'draft', tags: ['a'] });
    await update('Doc', id, { title: 'final', extra: 5, tags: { __op: 'Delete' } });
    const [, first] = await rowHistory('Doc', id);
    const live = await LiveClient.connect(t, { masterKey: KEYS.masterKey });
    live.send({ op: 'subscribe', requestId: 1, query: { className: 'Doc', where: {} } });
    expect((await live.take()).op).toBe('subscribed');
    const res = await t.request('POST', `/history/Doc/${id}/revert`, {
      as: 'master',
      headers: CONSOLE,
      body: { version: first!.id },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ objectId: id, updatedAt: expect.any(String) });
    const row = (await t.request('GET', `/classes/Doc/${id}`, { as: 'master' })).json;
    expect(row).toEqual({ ...first!.after, updatedAt: res.json.updatedAt });
    // Realtime saw the revert as the update it is.
    const frame = await live.take();
    expect(frame).toMatchObject({ op: 'update', object: { objectId: id, title: 'draft', tags: ['a'] } });
    live.ws.close();
    const [reverted] = await rowHistory('Doc', id);
    expect(reverted).toMatchObject({
      op: 'revert',
      revertOf: first!.id,
      source: 'console',
      caller: { kind: 'console', name: 'grace@console' },
      after: row,
    });
  });

  it("revert passes the class's triggers: a beforeSave that rejects it blocks it with its error", async () => {
    // An import skips triggers, so a version the trigger would refuse exists.
    await t.service.data.writes.restore(ctxOf(MASTER, 'import'), 'Note', {
      objectId: 'forbidden1',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      title: 'forbidden',
    });
    await update('Note', 'forbidden1', { title: 'fine' });
    const [, imported] = await rowHistory('Note', 'forbidden1');
    const res = await t.request('POST', '/history/Note/forbidden1/revert', {
      as: 'master',
      body: { version: imported!.id },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 142, error: 'Notes may not be called forbidden.' });
    expect((await t.request('GET', '/classes/Note/forbidden1', { as: 'master' })).json.title).toBe('fine');
    expect((await rowHistory('Note', 'forbidden1')).length).toBe(2);
  });

  it('revert refuses a deleted row, an unknown version and a version of another row', async () => {
    const id = await create('Doc', { title: 'x' });
    const other = await create('Doc', { title: 'y' });
    const [otherVersion] = await rowHistory('Doc', other);
    const cases: Array<[string, unknown, number, { code: number; error: string }]> = [
      [id, { version: '999999999' }, 404, { code: 101, error: `No version 999999999 of Doc ${id}.` }],
      [
        id,
        { version: otherVersion!.id },
        404,
        { code: 101, error: `No version ${otherVersion!.id} of Doc ${id}.` },
      ],
      [id, {}, 400, { code: 107, error: 'The body must be {"version": "<a version id>"}.' }],
    ];
    for (const [objectId, body, status, answer] of cases) {
      const res = await t.request('POST', `/history/Doc/${objectId}/revert`, { as: 'master', body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.json).toEqual(answer);
    }
    await t.request('DELETE', `/classes/Doc/${other}`, { as: 'master' });
    const gone = await t.request('POST', `/history/Doc/${other}/revert`, {
      as: 'master',
      body: { version: otherVersion!.id },
    });
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ code: 101, error: 'Object not found.' });
  });

  it('restore re-creates a deleted row with its last fields and objectId, recorded as restore', async () => {
    const id = await create('Doc', { title: 'keep me', ACL: { '*': { read: true } } });
    await update('Doc', id, { title: 'kept' });
    const [last] = await rowHistory('Doc', id);
    await t.request('DELETE', `/classes/Doc/${id}`, { as: 'master' });
    const res = await t.request('POST', `/history/Doc/${id}/restore`, { as: 'master', body: {} });
    expect(res.status, res.text).toBe(201);
    expect(res.json).toEqual({ objectId: id, createdAt: expect.any(String) });
    const row = (await t.request('GET', `/classes/Doc/${id}`, { as: 'master' })).json;
    expect(row).toEqual({
      ...last!.after,
      createdAt: res.json.createdAt,
      updatedAt: res.json.createdAt,
    });
    const [restored] = await rowHistory('Doc', id);
    expect(restored).toMatchObject({ op: 'restore', before: null, after: row, source: 'rest' });
    const again = await t.request('POST', `/history/Doc/${id}/restore`, { as: 'master', body: {} });
    expect(again.status).toBe(400);
    expect(again.json).toEqual({
      code: 137,
      error: `Doc ${id} exists: restore re-creates a deleted row (revert changes an existing one).`,
    });
    const none = await t.request('POST', '/history/Doc/nobodyHere/restore', { as: 'master' });
    expect(none.status).toBe(404);
    expect(none.json).toEqual({ code: 101, error: 'Doc nobodyHere has no history.' });
  });
});

describe('master only', () => {
  const routes: Array<[string, string, unknown]> = [
    ['GET', '/history/Post', undefined],
    ['GET', '/history/Post/abc', undefined],
    ['GET', '/history/Post/abc/at?time=2026-01-01T00:00:00.000Z', undefined],
    ['POST', '/history/Post/abc/revert', { version: '1' }],
    ['POST', '/history/Post/abc/restore', {}],
  ];
  it('every route refuses a user and application keys alone, directly and in a batch', async () => {
    for (const [method, path, body] of routes) {
      for (const who of [{ sessionToken: ada.sessionToken }, {}]) {
        const res = await t.request(method, path, { ...who, body });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.json, `${method} ${path}`).toEqual(MASTER_ONLY);
      }
      const batch = await t.request('POST', '/batch', {
        sessionToken: ada.sessionToken,
        body: { requests: [{ method, path, body }] },
      });
      expect(batch.json, `${method} ${path}`).toEqual([{ error: MASTER_ONLY }]);
    }
  });
});

describe('options', () => {
  it('history off: no version is written; a class turned on keeps its own', async () => {
    const off = await startService({ history: { enabled: false, classes: { Kept: true } } });
    try {
      const post = await off.request('POST', '/classes/Post', { as: 'master', body: { a: 1 } });
      const kept = await off.request('POST', '/classes/Kept', { as: 'master', body: { a: 1 } });
      const list = async (path: string) => (await off.request('GET', path, { as: 'master' })).json.results;
      expect(await list(`/history/Post/${post.json.objectId}`)).toEqual([]);
      expect(await list('/history/Post')).toEqual([]);
      expect((await list(`/history/Kept/${kept.json.objectId}`)).map((v: { op: string }) => v.op)).toEqual([
        'create',
      ]);
    } finally {
      await off.close();
    }
  });

  it('retention: by count at each prune, by age on the injected clock', async () => {
    const start = Date.now();
    const clock = new FakeClock(start);
    const hour = 3600_000;
    const day = 24 * hour;
    const r = await startService(
      { history: { maxVersionsPerRow: 2, maxAgeMs: day, pruneIntervalMs: hour } },
      { clock },
    );
    try {
      const id = (await r.request('POST', '/classes/Log', { as: 'master', body: { n: 0 } })).json.objectId;
      for (let n = 1; n <= 3; n++)
        await r.request('PUT', `/classes/Log/${id}`, { as: 'master', body: { n } });
      const kept = async () =>
        (await r.request('GET', `/history/Log/${id}`, { as: 'master' })).json.results.map(
          (v: { after: { n: number } }) => v.after.n,
        );
      expect(await kept()).toEqual([3, 2, 1, 0]);
      clock.set(start + hour);
      expect(await r.service.history.settled()).toBe(2);
      expect(await kept()).toEqual([3, 2]);
      // The clock jumps past the age bound; the next prune is due on the way.
      clock.current = start + day + 2 * hour;
      clock.set(clock.current);
      expect(await r.service.history.settled()).toBe(2);
      expect(await kept()).toEqual([]);
    } finally {
      await r.close();
    }
  });

  it('refuses to record the classes that are never recorded', async () => {
    await expect(startService({ history: { classes: { _Session: true } } })).rejects.toThrow(
      'Invalid option "history.classes": _Session is never kept in the history.',
    );
  });
});
