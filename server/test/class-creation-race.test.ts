import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Concurrent first writes of a class (on both stores): the schema cache learns a class only once
 * its table is committed. Before, it learnt it inside the creating transaction, and a concurrent
 * create that read the cache then wrote to a table its own transaction could not see yet:
 * PostgreSQL answered 500 ("relation does not exist"). A writer that planned a field from an older
 * view of the class and finds it stored with another type is refused with 111.
 */

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => {
  await t?.close();
});

describe('concurrent first writes of a class', () => {
  it('every one of 30 concurrent creates of a new class, and of a new field, is stored', async () => {
    for (const className of ['RaceA', 'RaceB', 'RaceC']) {
      const created = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          t.request('POST', `/classes/${className}`, { as: 'master', body: { n: i } }),
        ),
      );
      expect(created.map((r) => r.status)).toEqual(created.map(() => 201));
      const added = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          t.request('POST', `/classes/${className}`, { as: 'master', body: { n: i, label: `l${i}` } }),
        ),
      );
      expect(added.map((r) => r.status)).toEqual(added.map(() => 201));
      const count = await t.request('GET', `/classes/${className}`, {
        as: 'master',
        query: { count: 1, limit: 0, where: { label: { $exists: true } } },
      });
      expect(count.json.count).toBe(30);
    }
  });

  it('in one transaction, a second create that gives a new field another type is refused (111) and no class stays', async () => {
    const res = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        transaction: true,
        requests: [
          { method: 'POST', path: '/classes/RaceTyped', body: { n: 1 } },
          { method: 'POST', path: '/classes/RaceTyped', body: { n: 'two' } },
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      code: 111,
      error: 'schema mismatch for RaceTyped.n; expected Number but got String',
    });
    const schema = await t.request('GET', '/schemas/RaceTyped', { as: 'master' });
    expect(schema.status).toBe(400);
    expect(schema.json).toEqual({ code: 103, error: 'Class RaceTyped does not exist.' });
  });
});
