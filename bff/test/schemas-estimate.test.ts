import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedRows } from '../../e2e/data-browser-seed.ts';
import type { SqlDriver } from '../../server/src/storage/sql/driver.ts';
import { EXACT_COUNT_LIMIT } from '../src/routes/schemas.ts';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * GET /bff/apps/:appId/schemas: a class whose estimate is over EXACT_COUNT_LIMIT answers the
 * service's estimate (countExact false) and is not counted; smaller ones are counted exactly;
 * GET .../classes/:className/count stays the exact count on demand.
 */

const A = '/bff/apps/test-app';
const BIG = EXACT_COUNT_LIMIT + 1;
let t: StartedBff;
let admin: BffFetch;
/** Every SQL statement the service's store reads with while `recording` is on. */
const statements: string[] = [];
let recording = false;

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  for (const className of ['Huge', 'Small']) {
    const res = await admin.post(`${A}/schemas`, { className, fields: { i: { type: 'Number' } } });
    expect(res.status, res.text).toBe(201);
  }
  await seedRows(t.service.service, 'Huge', BIG, (i) => ({ i }));
  await seedRows(t.service.service, 'Small', 7, (i) => ({ i }));
  // Seeding holds the event loop for seconds: let the bff close the keep-alive socket it timed out
  // meanwhile (and the test's fetch see it closed) before the next request could reuse it.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const driver = (t.service.service.core.store as unknown as { driver: SqlDriver }).driver;
  for (const k of ['get', 'all'] as const) {
    const original = driver[k].bind(driver) as (sql: string, params: unknown[]) => Promise<unknown>;
    (driver as unknown as Record<string, unknown>)[k] = (sql: string, params: unknown[]) => {
      if (recording) statements.push(sql);
      return original(sql, params);
    };
  }
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const countsOf = (table: string) =>
  statements.filter((s) => /COUNT\(/i.test(s) && s.includes(`FROM "${table}"`));

describe('GET /bff/apps/:appId/schemas: estimates for large classes', () => {
  it('a class over the threshold gets its estimate, countExact false, and no COUNT', async () => {
    expect(EXACT_COUNT_LIMIT).toBe(100_000);
    statements.length = 0;
    recording = true;
    const res = await admin.get(`${A}/schemas`);
    recording = false;
    expect(res.status, res.text).toBe(200);
    const huge = res.json.results.find((c: any) => c.className === 'Huge');
    expect(huge).toMatchObject({ count: BIG, countExact: false });
    expect(countsOf('Huge')).toEqual([]);
    // Classes at or under the threshold are still counted exactly.
    const small = res.json.results.find((c: any) => c.className === 'Small');
    expect(small).toMatchObject({ count: 7, countExact: true });
    expect(countsOf('Small')).toHaveLength(1);
    for (const c of res.json.results) {
      if (c.className !== 'Huge') expect(c.countExact, c.className).toBe(true);
    }
  });

  it('the on-demand count route stays exact (the estimate overestimates after deletes)', async () => {
    // A row from the middle: the rowid range (the estimate) keeps counting its gap.
    const middle = await t.service.request('GET', '/classes/Huge', {
      as: 'master',
      query: { limit: 1, skip: 500 },
    });
    expect(middle.status, middle.text).toBe(200);
    const id = middle.json.results[0].objectId;
    expect((await admin.delete(`${A}/classes/Huge/${id}`)).status).toBe(200);

    statements.length = 0;
    recording = true;
    const count = await admin.get(`${A}/classes/Huge/count`);
    recording = false;
    expect(count.json).toEqual({ count: BIG - 1 });
    expect(countsOf('Huge')).toHaveLength(1);

    const list = await admin.get(`${A}/schemas`);
    const huge = list.json.results.find((c: any) => c.className === 'Huge');
    expect(huge).toMatchObject({ count: BIG, countExact: false });
  });
});
