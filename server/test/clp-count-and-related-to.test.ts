import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClass, createRow, createUser, pointer, type TestUser } from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Two access checks no other suite could see fail: CLP count when results and a count are asked
 * together (`count=1` with the default limit), and the protected-field check on the relation key
 * of a `$relatedTo`.
 */
let t: TestService;
let alice: TestUser;
let staffer: TestUser;
const ids: Record<string, string> = {};

beforeAll(async () => {
  t = await startService();
  alice = await createUser(t);
  staffer = await createUser(t);
  // Tally: anyone may find rows, only `staffer` may count them.
  await createClass(
    t,
    'Tally',
    { n: { type: 'Number' } },
    {
      find: { '*': true },
      get: { '*': true },
      count: { [staffer.id]: true },
      create: {},
      update: {},
      delete: {},
      addField: {},
    },
  );
  for (const n of [1, 2, 3]) await createRow(t, 'Tally', { n, ACL: { '*': { read: true } } });
  // Team.members is protected from everyone but `staffer`.
  await createClass(t, 'Person', { name: { type: 'String' } });
  await createClass(
    t,
    'Team',
    { title: { type: 'String' }, members: { type: 'Relation', targetClass: 'Person' } },
    {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: {},
      update: {},
      delete: {},
      addField: {},
      protectedFields: { '*': ['members'], [staffer.id]: [] },
    },
  );
  ids.person = await createRow(t, 'Person', { name: 'pat', ACL: { '*': { read: true } } });
  ids.team = await createRow(t, 'Team', { title: 'red', ACL: { '*': { read: true } } });
  const add = await t.request('PUT', `/classes/Team/${ids.team}`, {
    as: 'master',
    body: { members: { __op: 'AddRelation', objects: [pointer('Person', ids.person)] } },
  });
  expect(add.status, add.text).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

describe('CLP count with results and a count together', () => {
  const denied = { code: 119, error: 'Permission denied for action count on class Tally.' };

  it('is refused without CLP count, whatever the limit, while a plain find works', async () => {
    for (const query of [{ count: 1 }, { count: 1, limit: 2 }, { count: 1, limit: 0 }]) {
      const res = await t.request('GET', '/classes/Tally', { sessionToken: alice.token, query });
      expect(res.status, `${JSON.stringify(query)} ${res.text}`).toBe(400);
      expect(res.json).toEqual(denied);
    }
    for (const as of ['rest', 'js'] as const) {
      const anon = await t.request('GET', '/classes/Tally', { as, query: { count: 1 } });
      expect(anon.status, anon.text).toBe(400);
      expect(anon.json).toEqual(denied);
    }
    const find = await t.request('GET', '/classes/Tally', {
      sessionToken: alice.token,
      query: { order: 'n' },
    });
    expect(find.status, find.text).toBe(200);
    expect(find.json.results.map((r: { n: number }) => r.n)).toEqual([1, 2, 3]);
    expect(find.json.count).toBeUndefined();
  });

  it('the same in a batch', async () => {
    const res = await t.request('POST', '/batch', {
      sessionToken: alice.token,
      body: { requests: [{ method: 'GET', path: '/classes/Tally', body: { count: 1 } }] },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual([{ error: denied }]);
  });

  it('a caller with CLP count gets results and the count', async () => {
    const res = await t.request('GET', '/classes/Tally', {
      sessionToken: staffer.token,
      query: { count: 1, limit: 2, order: 'n' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.results.map((r: { n: number }) => r.n)).toEqual([1, 2]);
    expect(res.json.count).toBe(3);
  });
});

describe('$relatedTo and protected fields', () => {
  const where = () => ({ $relatedTo: { object: pointer('Team', ids.team), key: 'members' } });

  it('a caller the relation field is protected from cannot query through it', async () => {
    for (const query of [{ where: where() }, { where: where(), count: 1, limit: 0 }]) {
      const res = await t.request('GET', '/classes/Person', { sessionToken: alice.token, query });
      expect(res.status, res.text).toBe(400);
      expect(res.json).toEqual({
        code: 119,
        error: 'This user is not allowed to query members on class Team.',
      });
    }
    const anon = await t.request('GET', '/classes/Person', { query: { where: where() } });
    expect(anon.status, anon.text).toBe(400);
    expect(anon.json).toEqual({
      code: 119,
      error: 'This user is not allowed to query members on class Team.',
    });
    // Nested under $or, and inside a subquery, too.
    const nested = await t.request('GET', '/classes/Person', {
      sessionToken: alice.token,
      query: { where: { $or: [where(), { name: 'nobody' }] } },
    });
    expect(nested.status, nested.text).toBe(400);
    expect(nested.json).toEqual({
      code: 119,
      error: 'This user is not allowed to query members on class Team.',
    });
  });

  it('a caller exempt from the protection gets the related rows; the master key too', async () => {
    const res = await t.request('GET', '/classes/Person', {
      sessionToken: staffer.token,
      query: { where: where() },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.results.map((r: { objectId: string }) => r.objectId)).toEqual([ids.person]);
    const master = await t.request('GET', '/classes/Person', { as: 'master', query: { where: where() } });
    expect(master.json.results.map((r: { objectId: string }) => r.objectId)).toEqual([ids.person]);
  });
});
