import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlDriver } from '../src/storage/sql/driver.ts';
import { ON_POSTGRES, startService, type TestService } from './helpers/service.ts';

/** GET /schemas and GET /schemas/<C> carry `estimatedCount`: a cheap row estimate, master only. */

let t: TestService;
const driverOf = (s: TestService) => (s.service.core.store as unknown as { driver: SqlDriver }).driver;

beforeAll(async () => {
  t = await startService();
  const made = await t.request('POST', '/schemas/Est', {
    as: 'master',
    body: { fields: { n: { type: 'Number' } } },
  });
  expect(made.status, made.text).toBe(200);
  for (let i = 0; i < 25; i++) {
    expect((await t.request('POST', '/classes/Est', { as: 'master', body: { n: i } })).status).toBe(201);
  }
});
afterAll(async () => {
  await t?.close();
});

describe('estimatedCount on the schema routes', () => {
  it('equals the exact count on an insert-only class, in the list and for one class', async () => {
    const exact = await t.request('GET', '/classes/Est', { as: 'master', query: { limit: 0, count: 1 } });
    expect(exact.json.count).toBe(25);
    const one = await t.request('GET', '/schemas/Est', { as: 'master' });
    expect(one.status).toBe(200);
    expect(one.json.estimatedCount).toBe(25);
    const list = await t.request('GET', '/schemas', { as: 'master' });
    expect(list.status).toBe(200);
    for (const c of list.json.results) expect(typeof c.estimatedCount, c.className).toBe('number');
    expect(list.json.results.find((c: any) => c.className === 'Est').estimatedCount).toBe(25);
  });

  it('is 0 for an empty class', async () => {
    expect((await t.request('POST', '/schemas/Empty', { as: 'master', body: { fields: {} } })).status).toBe(
      200,
    );
    expect((await t.request('GET', '/schemas/Empty', { as: 'master' })).json.estimatedCount).toBe(0);
  });

  // SQLite's estimate (the rowid range); postgres-store.test.ts checks PostgreSQL's (pg_class).
  it.skipIf(ON_POSTGRES)('stays cheap: no COUNT statement runs, only the rowid range', async () => {
    const driver = driverOf(t);
    const seen: string[] = [];
    const wrap = <K extends 'get' | 'all'>(k: K) => {
      const original = driver[k].bind(driver) as SqlDriver[K];
      (driver as any)[k] = (sql: string, params: unknown[]) => {
        seen.push(sql);
        return (original as any)(sql, params);
      };
      return () => {
        (driver as any)[k] = original;
      };
    };
    const restore = [wrap('get'), wrap('all')];
    try {
      expect((await t.request('GET', '/schemas', { as: 'master' })).status).toBe(200);
      expect((await t.request('GET', '/schemas/Est', { as: 'master' })).status).toBe(200);
    } finally {
      for (const r of restore) r();
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((s) => /count\s*\(/i.test(s))).toEqual([]);
    expect(seen.some((s) => /MAX\(rowid\)/.test(s))).toBe(true);
  });

  it('is still master only', async () => {
    for (const as of ['rest', 'js'] as const) {
      for (const path of ['/schemas', '/schemas/Est']) {
        const res = await t.request('GET', path, { as });
        expect(res.status, `${as} ${path}`).toBe(403);
        expect(res.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
      }
    }
  });
});
