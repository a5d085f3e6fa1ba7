import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenarios } from './helpers/scenarios.ts';
import { startService, type TestService } from './helpers/service.ts';

runScenarios('analytics with the default adapter', [
  {
    name: 'events are accepted',
    method: 'POST',
    path: '/events/AppOpened',
    body: { dimensions: { os: 'ios' } },
    status: 200,
    expect: {},
  },
  {
    name: 'nothing is stored: the query explains how to turn storage on',
    method: 'GET',
    path: '/analytics/events',
    as: 'master',
    status: 400,
    code: 102,
    expect: {
      error:
        'Analytics events are not stored: set the option analytics.adapter to "store" to keep and query them.',
    },
  },
  {
    name: 'serverInfo says events are not stored',
    method: 'GET',
    path: '/serverInfo',
    status: 200,
    expect: { features: { analytics: { events: true, stored: false }, files: true, aggregate: true } },
  },
]);

describe('analytics with the store adapter', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ analytics: { adapter: 'store' } });
    const events: Array<[string, Record<string, string>, string]> = [
      ['AppOpened', { os: 'ios' }, '2026-03-01T10:15:00.000Z'],
      ['AppOpened', { os: 'android' }, '2026-03-01T10:45:00.000Z'],
      ['AppOpened', { os: 'ios' }, '2026-03-01T11:05:00.000Z'],
      ['Purchase', { os: 'ios', plan: 'pro' }, '2026-03-02T09:00:00.000Z'],
    ];
    for (const [name, dimensions, at] of events) {
      const res = await t.request('POST', `/events/${name}`, { body: { dimensions, at } });
      expect(res.status).toBe(200);
    }
  });
  afterAll(() => t.close());

  it('counts per name per hour and per day, by time range and dimension', async () => {
    const hourly = await t.request('GET', '/analytics/events', { as: 'master', query: { interval: 'hour' } });
    expect(hourly.json.results).toEqual([
      { name: 'AppOpened', bucket: '2026-03-01T10', count: 2 },
      { name: 'AppOpened', bucket: '2026-03-01T11', count: 1 },
      { name: 'Purchase', bucket: '2026-03-02T09', count: 1 },
    ]);
    const daily = await t.request('GET', '/analytics/events', {
      as: 'master',
      query: { interval: 'day', dimensions: JSON.stringify({ os: 'ios' }) },
    });
    expect(daily.json.results).toEqual([
      { name: 'AppOpened', bucket: '2026-03-01', count: 2 },
      { name: 'Purchase', bucket: '2026-03-02', count: 1 },
    ]);
    const ranged = await t.request('GET', '/analytics/events', {
      as: 'master',
      query: { since: '2026-03-01T10:30:00Z', until: '2026-03-02T00:00:00Z', names: 'AppOpened' },
    });
    expect(ranged.json.results).toEqual([{ name: 'AppOpened', bucket: '2026-03-01', count: 2 }]);
  });

  it('the query and the events class are master only; bad queries answer 102', async () => {
    const refused = await t.request('GET', '/analytics/events', { as: 'rest' });
    expect(refused).toMatchObject({
      status: 403,
      json: { code: 119, error: 'unauthorized: master key is required' },
    });
    const rows = await t.request('GET', '/classes/_AnalyticsEvent', { as: 'rest' });
    expect(rows).toMatchObject({ status: 403, json: { code: 119 } });
    const bad = await t.request('GET', '/analytics/events', { as: 'master', query: { interval: 'week' } });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(102);
    expect(bad.json.error).toMatch(/^Invalid analytics query: interval: /);
    const info = await t.request('GET', '/serverInfo');
    expect(info.json.features.analytics.stored).toBe(true);
  });
});

describe('idempotency', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ idempotency: { paths: ['classes/.*', 'functions/.*'], ttl: 1 } });
  });
  afterAll(() => t.close());

  const create = (id: string, title = 'x') =>
    t.request('POST', '/classes/Order', {
      as: 'master',
      headers: { 'X-Backend-Request-Id': id },
      body: { title },
    });

  it('a repeated request id answers 159 and writes once, also under concurrent duplicates', async () => {
    expect((await create('req-1')).status).toBe(201);
    const again = await create('req-1');
    expect(again).toMatchObject({ status: 400, json: { code: 159, error: 'Duplicate request' } });
    const burst = await Promise.all(Array.from({ length: 8 }, () => create('req-2', 'burst')));
    expect(burst.filter((r) => r.status === 201)).toHaveLength(1);
    expect(burst.filter((r) => r.json.code === 159)).toHaveLength(7);
    const rows = await t.request('GET', '/classes/Order', {
      as: 'master',
      query: { where: { title: 'burst' }, count: 1, limit: 0 },
    });
    expect(rows.json.count).toBe(1);
  });

  it('paths that do not match, and requests without an id, are not guarded', async () => {
    expect(
      (await t.request('GET', '/serverInfo', { headers: { 'X-Backend-Request-Id': 'req-3' } })).status,
    ).toBe(200);
    expect(
      (await t.request('GET', '/serverInfo', { headers: { 'X-Backend-Request-Id': 'req-3' } })).status,
    ).toBe(200);
    expect((await t.request('POST', '/classes/Order', { as: 'master', body: { title: 'a' } })).status).toBe(
      201,
    );
    expect((await t.request('POST', '/classes/Order', { as: 'master', body: { title: 'a' } })).status).toBe(
      201,
    );
  });

  it('_Idempotency is master only; an id is usable again after the ttl, and expired records are swept', async () => {
    const refused = await t.request('GET', '/classes/_Idempotency', { as: 'rest' });
    expect(refused).toMatchObject({ status: 403, json: { code: 119 } });
    expect((await create('req-4')).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await create('req-4')).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1100));
    // The sweeper runs every ttl (1 s): wait until every expired claim is gone.
    const deadline = Date.now() + 10_000;
    let left = -1;
    while (Date.now() < deadline) {
      const rows = await t.request('GET', '/classes/_Idempotency', {
        as: 'master',
        query: {
          where: { expire: { $lt: { __type: 'Date', iso: new Date().toISOString() } } },
          count: 1,
          limit: 0,
        },
      });
      left = rows.json.count;
      if (left === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(left).toBe(0);
  });
});
