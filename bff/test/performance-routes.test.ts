import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The console's Performance page reads and changes the service's Performance API through the bff
 * (GET /bff/apps/<app>/performance; POST .../performance/classes/<C>/indexes {shape}; DELETE
 * .../performance/classes/<C>/indexes/<name>). Every console user may read it; building and
 * dropping are changes (admins only), each an audit entry. Real service, real bff.
 */

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
const A = '/bff/apps/test-app';
const P = `${A}/performance`;
const SHAPE = 'Game|eq:|range:score|sort:';
const INDEX = 'Game:auto:score';

beforeAll(async () => {
  // No round of automatic decisions runs during the suite: only the console builds and drops.
  t = await startBff({ service: { autoIndex: { checkIntervalMs: 3_600_000 } } });
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  const requests = Array.from({ length: 30 }, (_, i) => ({
    method: 'POST',
    path: '/classes/Game',
    body: { score: i, secret: `s${i}` },
  }));
  expect((await t.service.request('POST', '/batch', { as: 'master', body: { requests } })).status).toBe(200);
  const clp = await t.service.request('PUT', '/schemas/Game', {
    as: 'master',
    body: { classLevelPermissions: { protectedFields: { 'role:Staff': ['secret'] } } },
  });
  expect(clp.status, clp.text).toBe(200);
  for (const where of [
    { score: { $gte: 5 } },
    { score: { $gte: 7 } },
    { score: { $lt: 3 } },
    { secret: 's1' },
  ]) {
    const res = await t.service.request('GET', '/classes/Game', { as: 'master', query: { where } });
    expect(res.status, res.text).toBe(200);
  }
});

afterAll(async () => {
  await t?.close();
});

const auditOf = (action: string) => t.bff.ctx.audit.list({ action, limit: 1000 });
const READ_ONLY = { code: 119, error: 'Read-only console users cannot change anything.' };

describe('the Performance routes', () => {
  it('every console user reads the shapes with their counts and the index serving each', async () => {
    for (const user of [admin, viewer]) {
      const res = await user.get(P);
      expect(res.status).toBe(200);
      expect(res.json.indexes).toEqual([]);
      const byShape = new Map(res.json.results.map((r: { shape: string }) => [r.shape, r]));
      expect(byShape.get(SHAPE)).toMatchObject({
        className: 'Game',
        equality: [],
        range: ['score'],
        sort: [],
        count: 3,
        index: null,
      });
      expect(byShape.get('Game|eq:secret|range:|sort:')).toMatchObject({ count: 1, index: null });
    }
  });

  it('refuses a read-only user a build and a drop with the code and text of every write route', async () => {
    const build = await viewer.post(`${P}/classes/Game/indexes`, { shape: SHAPE });
    expect(build.status).toBe(403);
    expect(build.json).toEqual(READ_ONLY);
    const drop = await viewer.delete(`${P}/classes/Game/indexes/${encodeURIComponent(INDEX)}`);
    expect(drop.status).toBe(403);
    expect(drop.json).toEqual(READ_ONLY);
    expect((await admin.get(P)).json.indexes).toEqual([]);
    expect(auditOf('index')).toEqual([]);
  });

  it('refuses what is not a class name, a shape of another class, an unseen shape, a protected field', async () => {
    for (const [path, send] of [
      [`${P}/classes/bad-name/indexes`, (p: string) => admin.post(p, { shape: SHAPE })],
      [`${P}/classes/bad-name/indexes/${encodeURIComponent(INDEX)}`, (p: string) => admin.delete(p)],
    ] as const) {
      const res = await send(path);
      expect(res.status).toBe(400);
      expect(res.json).toEqual({
        code: 107,
        error: 'Invalid class name: must be a class name (letters, digits, underscores)',
      });
    }
    const other = await admin.post(`${P}/classes/Other/indexes`, { shape: SHAPE });
    expect(other.status).toBe(400);
    expect(other.json).toEqual({
      code: 107,
      error: 'Invalid index request: shape: must be a query shape of Other',
    });
    const extra = await admin.post(`${P}/classes/Game/indexes`, { shape: SHAPE, keys: { score: 1 } });
    expect(extra.status).toBe(400);
    expect(extra.json.code).toBe(107);
    const unseen = await admin.post(`${P}/classes/Game/indexes`, { shape: 'Game|eq:nope|range:|sort:' });
    expect(unseen.status).toBe(404);
    expect(unseen.json).toEqual({ code: 101, error: 'No query shape Game|eq:nope|range:|sort: was seen.' });
    const secret = await admin.post(`${P}/classes/Game/indexes`, { shape: 'Game|eq:secret|range:|sort:' });
    expect(secret.status).toBe(400);
    expect(secret.json).toEqual({
      code: 119,
      error: 'No index for Game|eq:secret|range:|sort:: secret is a protected field.',
    });
    expect((await admin.get(P)).json.indexes).toEqual([]);
    expect(auditOf('index')).toEqual([]);
  });

  it('builds the index of a shape that scans, audited as index.build', async () => {
    const res = await admin.post(`${P}/classes/Game/indexes`, { shape: SHAPE });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({
      name: INDEX,
      className: 'Game',
      keys: [{ field: 'score', descending: false }],
      origin: 'requested',
      shape: SHAPE,
      effect: { beforeCount: 3, afterCount: 0 },
    });
    expect(typeof res.json.builtAt).toBe('string');
    const [entry, ...more] = auditOf('index.build');
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      user: 'admin',
      app: 'test-app',
      action: 'index.build',
      target: `Game.${INDEX}`,
      before: null,
      after: res.json,
    });
    const listed = (await viewer.get(P)).json;
    expect(listed.indexes).toEqual([res.json]);
    expect(listed.results.find((r: { shape: string }) => r.shape === SHAPE).index).toBe(INDEX);

    const again = await admin.post(`${P}/classes/Game/indexes`, { shape: SHAPE });
    expect(again.status).toBe(400);
    expect(again.json).toEqual({ code: 102, error: `The query shape ${SHAPE} is served by ${INDEX}.` });
    expect(auditOf('index.build')).toHaveLength(1);
  });

  it('refuses to drop an index the class does not have', async () => {
    for (const [cls, name] of [
      ['Game', 'Game:auto:nope'],
      ['Other', INDEX],
    ]) {
      const res = await admin.delete(`${P}/classes/${cls}/indexes/${encodeURIComponent(name!)}`);
      expect(res.status).toBe(404);
      expect(res.json).toEqual({ code: 101, error: `${cls} has no automatic index named ${name}.` });
    }
    expect((await admin.get(P)).json.indexes.map((i: { name: string }) => i.name)).toEqual([INDEX]);
    expect(auditOf('index.drop')).toEqual([]);
  });

  it('drops an automatic index, audited as index.drop with the index before', async () => {
    const before = (await admin.get(P)).json.indexes[0];
    const res = await admin.delete(`${P}/classes/Game/indexes/${encodeURIComponent(INDEX)}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({});
    const [entry, ...more] = auditOf('index.drop');
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      user: 'admin',
      app: 'test-app',
      action: 'index.drop',
      target: `Game.${INDEX}`,
      before,
      after: null,
    });
    const listed = (await admin.get(P)).json;
    expect(listed.indexes).toEqual([]);
    expect(listed.results.find((r: { shape: string }) => r.shape === SHAPE).index).toBeNull();
    // The audit page's filters find both by class.
    const audit = await viewer.get('/bff/audit?app=test-app&target=Game');
    expect(audit.json.results.map((e: { action: string }) => e.action)).toEqual([
      'index.drop',
      'index.build',
    ]);
  });
});
