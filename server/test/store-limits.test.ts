import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateOptions } from '../src/config/options.ts';
import { createService } from '../src/index.ts';
import { createUser } from './helpers/access-world.ts';
import { KEYS, ON_POSTGRES, startService, storeRelations, type TestService } from './helpers/service.ts';

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

describe('the store seam', () => {
  it('databaseURI chooses the SQLite file; anything else stops the start naming the option', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-uri-'));
    const file = path.join(dir, 'elsewhere.sqlite');
    const service = await createService({
      ...KEYS,
      dataDir: path.join(dir, 'data'),
      databaseURI: `sqlite:${file}`,
      logLevel: 'warn',
    });
    await service.close();
    expect(existsSync(file)).toBe(true);
    expect(existsSync(path.join(dir, 'data', 'data.sqlite'))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
    expect(() => validateOptions({ ...KEYS, databaseURI: 'mysql://x' })).toThrow(
      /Invalid option "databaseURI"/,
    );
  });

  it('names longer than 63 bytes (a 120-character class with a relation and an index) fit PostgreSQL', async () => {
    const t = await startService();
    try {
      const className = `L${'o'.repeat(118)}g`;
      expect(className).toHaveLength(120);
      const created = await t.request('POST', `/schemas/${className}`, {
        as: 'master',
        body: {
          fields: { n: { type: 'Number' }, friends: { type: 'Relation', targetClass: '_User' } },
          indexes: { by_n_with_a_long_index_name: { n: 1 } },
        },
      });
      expect(created.status).toBe(200);
      const user = await createUser(t);
      const row = await t.request('POST', `/classes/${className}`, {
        as: 'master',
        body: {
          n: 5,
          friends: {
            __op: 'AddRelation',
            objects: [{ __type: 'Pointer', className: '_User', objectId: user.id }],
          },
        },
      });
      expect(row.status).toBe(201);
      const found = await t.request('GET', '/users', {
        as: 'master',
        query: {
          where: {
            $relatedTo: {
              object: { __type: 'Pointer', className, objectId: row.json.objectId },
              key: 'friends',
            },
          },
        },
      });
      expect(found.json.results.map((u: { objectId: string }) => u.objectId)).toEqual([user.id]);
      const names = (await storeRelations(t)).map((name) => ({ name }));
      expect(names.length).toBeGreaterThan(10);
      for (const { name } of names) expect(Buffer.byteLength(name), name).toBeLessThanOrEqual(63);
      expect(names.some(({ name }) => name.startsWith('Looo') && /_[0-9a-f]{8}$/.test(name))).toBe(true);
    } finally {
      await t.close();
    }
  });
});
