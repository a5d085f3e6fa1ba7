import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ON_POSTGRES, startService, type TestService } from './helpers/service.ts';

/**
 * A statement beyond the store's own limits (SQLite: expression depth) is the caller's 102 in the
 * service's words on every read path, never the engine's text and never a 500. PostgreSQL runs
 * these wheres, so the file is SQLite's (the PostgreSQL run maps its own limits in the same place,
 * storage/sql/driver.ts `storeLimitError`).
 */
const TOO_COMPLEX = {
  code: 102,
  error: 'Invalid where: it is too complex for the store. Nest fewer subqueries and conditions.',
};

function nestedInQuery(depth: number): Record<string, unknown> {
  let where: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) where = { self: { $inQuery: { className: 'Thing', where } } };
  return where;
}

describe.skipIf(ON_POSTGRES)('store limits in the service’s words', () => {
  let t: TestService;
  const deep = nestedInQuery(30);
  beforeAll(async () => {
    t = await startService();
    const made = await t.request('POST', '/classes/Thing', {
      as: 'master',
      body: { n: 1, v: [1, 0], self: { __type: 'Pointer', className: 'Thing', objectId: 'x' } },
    });
    expect(made.status, made.text).toBe(201);
  });
  afterAll(() => t.close());

  const paths: Array<[string, () => Promise<{ status: number; text: string; json: any }>]> = [
    ['find', () => t.request('GET', '/classes/Thing', { as: 'master', query: { where: deep } })],
    [
      'count',
      () => t.request('GET', '/classes/Thing', { as: 'master', query: { where: deep, count: 1, limit: 0 } }),
    ],
    [
      'aggregate $match then $group',
      () =>
        t.request('POST', '/aggregate/Thing', {
          as: 'master',
          body: { pipeline: [{ $match: deep }, { $group: { _id: null, n: { $sum: 1 } } }] },
        }),
    ],
    [
      'aggregate $match then $project',
      () =>
        t.request('POST', '/aggregate/Thing', {
          as: 'master',
          body: { pipeline: [{ $match: deep }, { $project: { n: 1 } }] },
        }),
    ],
    [
      'a $vectorSearch filter',
      () =>
        t.request('POST', '/aggregate/Thing', {
          as: 'master',
          body: { pipeline: [{ $vectorSearch: { queryVector: [1, 0], path: 'v', limit: 1, filter: deep } }] },
        }),
    ],
  ];

  it.each(paths)('%s answers 102 without the engine’s text', async (_name, send) => {
    const res = await send();
    expect(res.status, res.text).toBe(400);
    expect(res.json).toEqual(TOO_COMPLEX);
    expect(res.text).not.toMatch(/Expression tree|maximum depth|SQLITE|sqlite/i);
  });

  it('changes nothing: the row is still there and a simpler where still runs', async () => {
    const res = await t.request('GET', '/classes/Thing', {
      as: 'master',
      query: { where: nestedInQuery(5) },
    });
    expect(res.status).toBe(200);
    expect((await t.request('GET', '/classes/Thing', { as: 'master' })).json.results).toHaveLength(1);
  });
});
