import { afterEach, describe, expect, it } from 'vitest';
import type { QueryPerformance } from '../src/storage/performance.ts';
import { FakeClock } from './helpers/clock.ts';
import { ON_POSTGRES, startService, storeIndexes, type TestService } from './helpers/service.ts';

/**
 * Automatic indexes and the Performance API (docs/protocol.md#performance): the bounds (rows,
 * sightings within the window, indexes per class, never a protected field), building and
 * dropping, and the API's master-only routes. Both stores (`npm run test:pg` for PostgreSQL).
 */

const WINDOW = 60_000;
let t: TestService | undefined;
let clock: FakeClock;

afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function start(autoIndex: Record<string, unknown> = {}): Promise<TestService> {
  clock = new FakeClock(Date.UTC(2026, 0, 1));
  t = await startService(
    {
      autoIndex: {
        minRows: 20,
        minSightings: 3,
        windowMs: WINDOW,
        maxPerClass: 2,
        dropUnusedAfterMs: 3_600_000,
        ...autoIndex,
      },
    },
    { clock },
  );
  return t;
}

const performanceOf = (s: TestService): QueryPerformance => s.service.core.store.performance!;

/** Creates `n` rows of `className` in batches (master key). */
async function seed(s: TestService, className: string, n: number, row: (i: number) => object): Promise<void> {
  for (let from = 0; from < n; from += 50) {
    const requests = [];
    for (let i = from; i < Math.min(n, from + 50); i++)
      requests.push({ method: 'POST', path: `/classes/${className}`, body: row(i) });
    const res = await s.request('POST', '/batch', { as: 'master', body: { requests } });
    expect(res.status, res.text).toBe(200);
  }
}

async function find(s: TestService, className: string, query: Record<string, unknown>, times = 1) {
  for (let i = 0; i < times; i++) {
    const res = await s.request('GET', `/classes/${className}`, { as: 'master', query });
    expect(res.status, res.text).toBe(200);
  }
}

const byScore = { where: { score: { $gte: 5 } } };
const scoreIndex = 'Game:auto:score';

describe('automatic indexes: the bounds', () => {
  it('builds the index of a shape seen minSightings times within the window on a class of minRows rows', async () => {
    const s = await start();
    await seed(s, 'Game', 10, (i) => ({ score: i, player: `p${i % 3}` }));
    await find(s, 'Game', byScore, 3);
    const performance = performanceOf(s);
    await performance.tick();
    let shape = performance.report().shapes.find((r) => r.className === 'Game')!;
    expect(shape.index).toBeNull();
    expect(shape.waiting).toBe('10 rows, fewer than minRows 20');
    expect(await storeIndexes(s, 'Game')).not.toContain(scoreIndex);

    await seed(s, 'Game', 10, (i) => ({ score: 10 + i, player: 'q' }));
    await performance.tick();
    shape = performance.report().shapes.find((r) => r.className === 'Game')!;
    expect(shape.index).toBe(scoreIndex);
    expect(await storeIndexes(s, 'Game')).toContain(scoreIndex);
    const [index] = performance.report().indexes;
    expect(index).toMatchObject({
      name: scoreIndex,
      className: 'Game',
      keys: [{ field: 'score', descending: false }],
      origin: 'automatic',
      shape: 'Game|eq:|range:score|sort:',
      builtAt: new Date(clock.now()).toISOString(),
    });
    expect(index!.effect).toMatchObject({ beforeCount: 3, afterCount: 0 });
    // The index is not a declared one: the schema's indexes are unchanged.
    const schema = await s.request('GET', '/schemas/Game', { as: 'master' });
    expect(Object.keys(schema.json.indexes ?? {})).toEqual(['_id_']);
    await find(s, 'Game', byScore);
    expect(performance.report().indexes[0]!.effect).toMatchObject({ beforeCount: 3, afterCount: 1 });
  });

  it('counts only the sightings within the window (injected clock)', async () => {
    const s = await start({ minRows: 0 });
    await seed(s, 'Game', 5, (i) => ({ score: i }));
    const performance = performanceOf(s);
    await find(s, 'Game', byScore, 2);
    clock.set(clock.now() + WINDOW + 1);
    await find(s, 'Game', byScore);
    await performance.tick();
    expect(performance.report().shapes[0]).toMatchObject({
      count: 3,
      index: null,
      waiting: `seen 1 of 3 times within ${WINDOW} ms`,
    });
    await find(s, 'Game', byScore, 2);
    await performance.tick();
    expect(performance.report().shapes[0]!.index).toBe(scoreIndex);
  });

  it('builds at most maxPerClass indexes per class, equality before range before sort', async () => {
    const s = await start({ minRows: 0, minSightings: 1 });
    await seed(s, 'Game', 5, (i) => ({ score: i, player: `p${i}`, level: i % 2, name: `n${i}` }));
    await find(s, 'Game', { where: { player: 'p1', score: { $gt: 0 } }, order: 'name' });
    await find(s, 'Game', { where: { level: 1 }, order: '-name' });
    await find(s, 'Game', { where: { name: 'n1' } });
    const performance = performanceOf(s);
    await performance.tick();
    const { indexes, shapes } = performance.report();
    expect(indexes.map((i) => [i.name, i.keys])).toEqual([
      [
        'Game:auto:player+score',
        [
          { field: 'player', descending: false },
          { field: 'score', descending: false },
        ],
      ],
      [
        'Game:auto:level+-name',
        [
          { field: 'level', descending: false },
          { field: 'name', descending: true },
        ],
      ],
    ]);
    expect(shapes.find((r) => r.shape === 'Game|eq:name|range:|sort:')).toMatchObject({
      index: null,
      waiting: 'Game has 2 automatic indexes (maxPerClass 2)',
    });
    const names = await storeIndexes(s, 'Game');
    expect(names).toContain('Game:auto:player+score');
    expect(names).toContain('Game:auto:level+-name');
    expect(names).not.toContain('Game:auto:name');
  });

  it('never indexes a protected field, automatically or on request', async () => {
    const s = await start({ minRows: 0, minSightings: 1 });
    await seed(s, 'Card', 3, (i) => ({ secret: `s${i}`, open: i }));
    const clp = await s.request('PUT', '/schemas/Card', {
      as: 'master',
      body: { classLevelPermissions: { protectedFields: { 'role:Staff': ['secret'] } } },
    });
    expect(clp.status, clp.text).toBe(200);
    await find(s, 'Card', { where: { secret: 's1' } });
    const performance = performanceOf(s);
    await performance.tick();
    expect(performance.report().shapes[0]).toMatchObject({
      shape: 'Card|eq:secret|range:|sort:',
      index: null,
      waiting: 'secret is a protected field',
    });
    const res = await s.request('POST', '/performance/indexes', {
      as: 'master',
      body: { shape: 'Card|eq:secret|range:|sort:' },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      code: 119,
      error: 'No index for Card|eq:secret|range:|sort:: secret is a protected field.',
    });
    expect((await storeIndexes(s, 'Card')).filter((n) => n.includes(':auto:'))).toEqual([]);
  });

  it('is off with enabled: false (shapes are still reported)', async () => {
    const s = await start({ enabled: false, minRows: 0, minSightings: 1 });
    await seed(s, 'Game', 3, (i) => ({ score: i }));
    await find(s, 'Game', byScore);
    await performanceOf(s).tick();
    expect(performanceOf(s).report()).toMatchObject({ shapes: [{ count: 1, index: null }], indexes: [] });
  });
});

describe('automatic indexes: dropping', () => {
  it('drops an index no find used for dropUnusedAfterMs', async () => {
    const s = await start({ minRows: 0, minSightings: 1, dropUnusedAfterMs: 10_000 });
    await seed(s, 'Game', 3, (i) => ({ score: i }));
    await find(s, 'Game', byScore);
    const performance = performanceOf(s);
    await performance.tick();
    expect(await storeIndexes(s, 'Game')).toContain(scoreIndex);
    clock.set(clock.now() + 9_999);
    await performance.tick();
    expect(await storeIndexes(s, 'Game')).toContain(scoreIndex);
    clock.set(clock.now() + 2);
    await performance.tick();
    expect(await storeIndexes(s, 'Game')).not.toContain(scoreIndex);
    expect(performance.report().indexes).toEqual([]);
    expect(performance.report().shapes[0]!.index).toBeNull();
    // Built again only once the shape is seen again.
    await performance.tick();
    expect(await storeIndexes(s, 'Game')).not.toContain(scoreIndex);
    await find(s, 'Game', byScore);
    await performance.tick();
    expect(await storeIndexes(s, 'Game')).toContain(scoreIndex);
  });

  // PostgreSQL counts use in pg_stat_user_indexes, where a scan shows only once the planner
  // chooses the index (not on a table this small) and the statistics are flushed.
  it.skipIf(ON_POSTGRES)(
    'keeps an index a recorded find used (SQLite: use is tracked from the shapes)',
    async () => {
      const s = await start({ minRows: 0, minSightings: 1, dropUnusedAfterMs: 10_000 });
      await seed(s, 'Game', 3, (i) => ({ score: i }));
      await find(s, 'Game', byScore);
      const performance = performanceOf(s);
      await performance.tick();
      clock.set(clock.now() + 8_000);
      await find(s, 'Game', byScore);
      clock.set(clock.now() + 8_000);
      await performance.tick();
      expect(await storeIndexes(s, 'Game')).toContain(scoreIndex);
      expect(performance.report().indexes[0]!.lastUsedAt).toBe(new Date(clock.now() - 8_000).toISOString());
    },
  );

  it('a deleted field takes its automatic index with it', async () => {
    const s = await start({ minRows: 0, minSightings: 1 });
    await seed(s, 'Game', 3, (i) => ({ score: i }));
    await find(s, 'Game', byScore);
    const performance = performanceOf(s);
    await performance.tick();
    const del = await s.request('PUT', '/schemas/Game', {
      as: 'master',
      body: { fields: { score: { __op: 'Delete' } } },
    });
    expect(del.status, del.text).toBe(200);
    expect(await storeIndexes(s, 'Game')).not.toContain(scoreIndex);
    expect(performance.report().indexes).toEqual([]);
  });
});

describe('the Performance API', () => {
  it('lists shapes, builds the index of one on request and drops it', async () => {
    const s = await start();
    await seed(s, 'Game', 3, (i) => ({ score: i, player: 'p' }));
    await find(s, 'Game', byScore, 2);
    await find(s, 'Game', { where: { player: 'p' }, order: '-createdAt' });
    const list = await s.request('GET', '/performance/queries', {
      as: 'master',
      query: { scanning: 'true' },
    });
    expect(list.status).toBe(200);
    expect(list.json.indexes).toEqual([]);
    expect(list.json.results.map((r: { shape: string; count: number }) => [r.shape, r.count]).sort()).toEqual(
      [
        ['Game|eq:player|range:|sort:-createdAt', 1],
        ['Game|eq:|range:score|sort:', 2],
      ],
    );
    const first = list.json.results.find((r: { shape: string }) => r.shape === 'Game|eq:|range:score|sort:');
    expect(first).toMatchObject({ className: 'Game', equality: [], range: ['score'], sort: [], index: null });
    expect(first.meanMs).toBeGreaterThan(0);

    const built = await s.request('POST', '/performance/indexes', {
      as: 'master',
      body: { shape: 'Game|eq:|range:score|sort:' },
    });
    expect(built.status, built.text).toBe(201);
    expect(built.json).toMatchObject({ name: scoreIndex, origin: 'requested', className: 'Game' });
    expect(await storeIndexes(s, 'Game')).toContain(scoreIndex);
    const again = await s.request('POST', '/performance/indexes', {
      as: 'master',
      body: { shape: 'Game|eq:|range:score|sort:' },
    });
    expect(again.status).toBe(400);
    expect(again.json).toEqual({
      code: 102,
      error: `The query shape Game|eq:|range:score|sort: is served by ${scoreIndex}.`,
    });

    const dropped = await s.request('DELETE', `/performance/indexes/${encodeURIComponent(scoreIndex)}`, {
      as: 'master',
    });
    expect(dropped.status, dropped.text).toBe(200);
    expect(dropped.json).toEqual({});
    expect(await storeIndexes(s, 'Game')).not.toContain(scoreIndex);
    const gone = await s.request('DELETE', `/performance/indexes/${encodeURIComponent(scoreIndex)}`, {
      as: 'master',
    });
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ code: 101, error: `No automatic index is named ${scoreIndex}.` });
    // A declared index is never an automatic one: DELETE refuses it.
    const declared = await s.request(
      'DELETE',
      `/performance/indexes/${encodeURIComponent('Game:createdAt')}`,
      {
        as: 'master',
      },
    );
    expect(declared.status).toBe(404);
    expect(await storeIndexes(s, 'Game')).toContain('Game:createdAt');
  });

  it('refuses bad input with a protocol code and changes nothing', async () => {
    const s = await start();
    for (const body of [undefined, {}, { shape: 3 }, { shape: '' }, []]) {
      const res = await s.request('POST', '/performance/indexes', { as: 'master', body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json).toEqual({
        code: 107,
        error: 'The body must be {"shape": "<a shape of GET /performance/queries>"}.',
      });
    }
    const unknown = await s.request('POST', '/performance/indexes', {
      as: 'master',
      body: { shape: 'Nope|eq:' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ code: 101, error: 'No query shape Nope|eq: was seen.' });
    expect(performanceOf(s).report().indexes).toEqual([]);
  });

  it('is master-only on every route', async () => {
    const s = await start();
    const masterOnly = { code: 119, error: 'unauthorized: master key is required' };
    const user = await s.request('POST', '/users', { body: { username: 'ann', password: 'pw-ann-1234' } });
    expect(user.status, user.text).toBe(201);
    for (const [method, path, body] of [
      ['GET', '/performance/queries', undefined],
      ['POST', '/performance/indexes', { shape: 'Game|eq:|range:score|sort:' }],
      ['DELETE', '/performance/indexes/Game%3Aauto%3Ascore', undefined],
    ] as const) {
      for (const as of ['rest', 'js', 'user'] as const) {
        const res =
          as === 'user'
            ? await s.request(method, path, { sessionToken: user.json.sessionToken, body })
            : await s.request(method, path, { as, body });
        expect(res.status, `${method} ${path} ${as} ${res.text}`).toBe(403);
        expect(res.json).toEqual(masterOnly);
      }
    }
  });
});
