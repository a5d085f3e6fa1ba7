import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, pointer, type TestUser } from './helpers/access-world.ts';
import { buildNoteWorld } from './helpers/probe-worlds.ts';
import { runScenarios, type Scenario } from './helpers/scenarios.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * docs/protocol.md#access-control: with requiresAuthentication, a call without a session token is refused
 * (101 `Permission denied, user needs to be authenticated.`) before the ACL is consulted, even
 * when the same entry also says `"*": true`; on every operation and every path.
 */
const LOCKED = { '*': true, requiresAuthentication: true };
const CLP = Object.fromEntries(
  ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'].map((op) => [op, LOCKED]),
);
const NEEDS_AUTH = 'Permission denied, user needs to be authenticated.';

const refused = (
  name: string,
  s: Omit<Scenario, 'name' | 'status' | 'code' | 'errorContains'>,
): Scenario => ({
  name,
  ...s,
  status: 404,
  code: 101,
  errorContains: NEEDS_AUTH,
});

const unchanged = async (ctx: Parameters<NonNullable<Scenario['after']>>[0]) => {
  const res = await ctx.t.request('GET', `/classes/Locked/${ctx.vars.row}`, { as: 'master' });
  expect(res.status).toBe(200);
  expect(res.json.title).toBe('original');
};

const scenarios: Scenario[] = [
  refused('find, anonymous', { method: 'GET', path: '/classes/Locked' }),
  refused('count, anonymous', { method: 'GET', path: '/classes/Locked', query: { count: 1, limit: 0 } }),
  refused('find with a count, anonymous', { method: 'GET', path: '/classes/Locked', query: { count: 1 } }),
  refused('get, anonymous', { method: 'GET', path: '/classes/Locked/{row}' }),
  refused('create, anonymous, and nothing is stored', {
    method: 'POST',
    path: '/classes/Locked',
    body: { title: 'sneaked in' },
    after: async (ctx) => {
      const res = await ctx.t.request('GET', '/classes/Locked', {
        as: 'master',
        query: { where: { title: 'sneaked in' }, count: 1, limit: 0 },
      });
      expect(res.json.count).toBe(0);
    },
  }),
  refused('update, anonymous, and the row is unchanged', {
    method: 'PUT',
    path: '/classes/Locked/{row}',
    body: { title: 'changed' },
    after: unchanged,
  }),
  refused('delete, anonymous, and the row stays', {
    method: 'DELETE',
    path: '/classes/Locked/{row}',
    after: unchanged,
  }),
  refused('a subquery into the class, anonymous', {
    method: 'GET',
    path: '/classes/Linker',
    query: { where: { target: { $inQuery: { className: 'Locked', where: {} } } } },
  }),
  refused('a $select into the class, anonymous', {
    method: 'GET',
    path: '/classes/Linker',
    query: { where: { label: { $select: { query: { className: 'Locked', where: {} }, key: 'title' } } } },
  }),
  {
    name: 'a batch member, anonymous: the same refusal in its slot',
    method: 'POST',
    path: '/batch',
    body: {
      requests: [
        { method: 'GET', path: '/classes/Locked' },
        { method: 'PUT', path: '/classes/Locked/{row}', body: { title: 'batched' } },
        { method: 'GET', path: '/classes/Linker' },
      ],
    },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json[0]).toEqual({ error: { code: 101, error: NEEDS_AUTH } });
      expect(res.json[1]).toEqual({ error: { code: 101, error: NEEDS_AUTH } });
      expect(res.json[2].success.results).toHaveLength(1);
      await unchanged(ctx);
    },
  },
  {
    name: 'include, anonymous: the pointer stays bare',
    method: 'GET',
    path: '/classes/Linker',
    query: { include: 'target' },
    status: 200,
    notContains: ['original'],
    after: async (ctx, res) => {
      expect(res.json.results[0].target).toEqual(pointer('Locked', ctx.vars.row!));
    },
  },
  {
    name: 'find with a session',
    method: 'GET',
    path: '/classes/Locked',
    sessionToken: '{token}',
    status: 200,
    after: async (_ctx, res) =>
      expect(res.json.results.map((r: { title: string }) => r.title)).toEqual(['original']),
  },
  {
    name: 'count with a session',
    method: 'GET',
    path: '/classes/Locked',
    query: { count: 1, limit: 0 },
    sessionToken: '{token}',
    status: 200,
    expect: { results: [], count: 1 },
  },
  {
    name: 'include with a session: the row',
    method: 'GET',
    path: '/classes/Linker',
    query: { include: 'target' },
    sessionToken: '{token}',
    status: 200,
    after: async (_ctx, res) =>
      expect(res.json.results[0].target).toMatchObject({ __type: 'Object', title: 'original' }),
  },
  {
    name: 'a subquery with a session',
    method: 'GET',
    path: '/classes/Linker',
    query: { where: { target: { $inQuery: { className: 'Locked', where: {} } } } },
    sessionToken: '{token}',
    status: 200,
    after: async (_ctx, res) => expect(res.json.results).toHaveLength(1),
  },
];

runScenarios('requiresAuthentication refuses anonymous callers on every path, "*" or not', scenarios, {
  setup: async (ctx) => {
    const { t, vars } = ctx;
    await t.request('POST', '/schemas/Locked', {
      as: 'master',
      body: { fields: { title: { type: 'String' } }, classLevelPermissions: CLP },
    });
    const row = await t.request('POST', '/classes/Locked', {
      as: 'master',
      body: { title: 'original', ACL: { '*': { read: true, write: true } } },
    });
    vars.row = row.json.objectId;
    await t.request('POST', '/classes/Linker', {
      as: 'master',
      body: { label: 'linker', target: pointer('Locked', vars.row!) },
    });
    vars.token = (await createUser(t)).token;
  },
});

describe('requiresAuthentication and pointer permissions in a world of notes (buildNoteWorld)', () => {
  let t: TestService;
  let alice: TestUser;
  let bob: TestUser;
  let ids: Record<string, string>;
  beforeAll(async () => {
    ({ t, alice, bob, ids } = await buildNoteWorld());
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('requiresAuthentication and pointer permissions', () => {
    it('requiresAuthentication answers 101 before ACL on find, get, count, subqueries (app keys only)', async () => {
      for (const q of [{}, { count: 1, limit: 0 }]) {
        const r = await t.request('GET', '/classes/Note', { query: q });
        expect(r.json).toEqual({ code: 101, error: 'Permission denied, user needs to be authenticated.' });
      }
      const g = await t.request('GET', `/classes/Note/${ids.publicNote}`, {});
      expect(g.json.code).toBe(101);
      const sub = await t.request('GET', '/classes/Link', {
        query: { where: { to: { $inQuery: { className: 'Note', where: {} } } } },
      });
      expect(sub.json.code).toBe(101);
    });

    it('readUserFields limit find, get, include and subqueries to the pointed-at user', async () => {
      const bobFind = await t.request('GET', '/classes/Mine', { sessionToken: bob.token });
      expect(bobFind.json.results).toEqual([]);
      const bobGet = await t.request('GET', `/classes/Mine/${ids.aliceMine}`, { sessionToken: bob.token });
      expect(bobGet.json.code).toBe(101);
      const inc = await t.request('GET', `/classes/Link/${ids.link}`, {
        sessionToken: bob.token,
        query: { include: 'to,many' },
      });
      expect(inc.status).toBe(200);
      expect(inc.text).not.toContain('alice-mine');
      const sub = await t.request('GET', '/classes/Link', {
        sessionToken: bob.token,
        query: { where: { to: { $inQuery: { className: 'Mine', where: {} } } } },
      });
      expect(sub.json.results).toEqual([]);
      const anon = await t.request('GET', '/classes/Link', {
        query: { where: { to: { $inQuery: { className: 'Mine', where: {} } } } },
      });
      expect(anon.status).toBe(400);
      expect(anon.json).toEqual({ code: 119, error: 'Permission denied for action find on class Mine.' });
      const upd = await t.request('PUT', `/classes/Mine/${ids.aliceMine}`, {
        sessionToken: bob.token,
        body: { body: 'changed' },
      });
      expect(upd.json.code).toBe(101);
      const del = await t.request('DELETE', `/classes/Mine/${ids.aliceMine}`, { sessionToken: bob.token });
      expect(del.json.code).toBe(101);
      const aliceGet = await t.request('GET', `/classes/Mine/${ids.aliceMine}`, {
        sessionToken: alice.token,
      });
      expect(aliceGet.json.body).toBe('alice-mine');
    });
  });
});

/**
 * Class Open (with `openFields`) and class Locked behind LOCKED for every operation, holding one
 * public row whose relation `rel` points to the one Open row.
 */
async function seedLockedOwner(
  t: TestService,
  openFields: Record<string, unknown>,
): Promise<{ openId: string; ownerId: string }> {
  await t.request('POST', '/schemas/Open', { as: 'master', body: { fields: openFields } });
  await t.request('POST', '/schemas/Locked', {
    as: 'master',
    body: {
      fields: { title: { type: 'String' }, rel: { type: 'Relation', targetClass: 'Open' } },
      classLevelPermissions: CLP,
    },
  });
  const open = await t.request('POST', '/classes/Open', { as: 'master', body: { label: 'open' } });
  const owner = await t.request('POST', '/classes/Locked', {
    as: 'master',
    body: {
      title: 'original',
      ACL: { '*': { read: true, write: true } },
      rel: { __op: 'AddRelation', objects: [pointer('Open', open.json.objectId)] },
    },
  });
  return { openId: open.json.objectId as string, ownerId: owner.json.objectId as string };
}

/** A refusal whose whole answer is the 101 of requiresAuthentication, nothing more. */
const refusedExactly = (
  name: string,
  s: Omit<Scenario, 'name' | 'status' | 'code' | 'errorContains'>,
): Scenario => ({
  name,
  ...s,
  status: 404,
  code: 101,
  errorContains: NEEDS_AUTH,
  after: async (ctx, res) => {
    expect(res.json).toEqual({ code: 101, error: NEEDS_AUTH });
    await s.after?.(ctx, res);
  },
});

runScenarios(
  'requiresAuthentication: subqueries, $relatedTo and addField refuse an anonymous caller',
  [
    refusedExactly('$relatedTo with an owner in the class', {
      method: 'GET',
      path: '/classes/Open',
      query: {
        where: {
          $relatedTo: { object: { __type: 'Pointer', className: 'Locked', objectId: '{row}' }, key: 'rel' },
        },
      },
    }),
    refusedExactly('$notInQuery into the class', {
      method: 'GET',
      path: '/classes/Open',
      query: { where: { target: { $notInQuery: { className: 'Locked', where: {} } } } },
    }),
    refusedExactly('$dontSelect into the class', {
      method: 'GET',
      path: '/classes/Open',
      query: {
        where: { label: { $dontSelect: { query: { className: 'Locked', where: {} }, key: 'title' } } },
      },
    }),
    refusedExactly('addField: a new field, and the schema is unchanged', {
      method: 'POST',
      path: '/classes/AddLocked',
      body: { title: 'x', sneaked: 'in' },
      after: async (ctx) => {
        const schema = await ctx.t.request('GET', '/schemas/AddLocked', { as: 'master' });
        expect(schema.json.fields.sneaked).toBeUndefined();
      },
    }),
    {
      name: 'addField with a session: the field is added',
      method: 'POST',
      path: '/classes/AddLocked',
      body: { title: 'y', added: 'yes' },
      sessionToken: '{token}',
      status: 201,
    },
    {
      name: 'an existing field, anonymous: no addField needed',
      method: 'POST',
      path: '/classes/AddLocked',
      body: { title: 'z' },
      status: 201,
    },
  ],
  {
    setup: async (ctx) => {
      const { t, vars } = ctx;
      const { openId, ownerId } = await seedLockedOwner(t, {
        label: { type: 'String' },
        target: { type: 'Pointer', targetClass: 'Locked' },
      });
      vars.row = ownerId;
      await t.request('PUT', `/classes/Open/${openId}`, {
        as: 'master',
        body: { target: pointer('Locked', vars.row!) },
      });
      await t.request('POST', '/schemas/AddLocked', {
        as: 'master',
        body: {
          fields: { title: { type: 'String' } },
          classLevelPermissions: {
            find: { '*': true },
            get: { '*': true },
            count: { '*': true },
            create: { '*': true },
            update: { '*': true },
            delete: { '*': true },
            addField: LOCKED,
          },
        },
      });
      vars.token = (await createUser(t)).token;
    },
  },
);

describe('requiresAuthentication: a signed-in caller passes through $relatedTo', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(() => t.close());

  it('answers the related rows to a session, and 101 to an anonymous caller', async () => {
    const { ownerId } = await seedLockedOwner(t, { label: { type: 'String' } });
    const query = { where: { $relatedTo: { object: pointer('Locked', ownerId), key: 'rel' } } };
    const { token } = await createUser(t);
    const signedIn = await t.request('GET', '/classes/Open', { sessionToken: token, query });
    expect(signedIn.status).toBe(200);
    expect(signedIn.json.results.map((r: { label: string }) => r.label)).toEqual(['open']);
    const anonymous = await t.request('GET', '/classes/Open', { query });
    expect(anonymous.status).toBe(404);
    expect(anonymous.json).toEqual({ code: 101, error: NEEDS_AUTH });
  });
});
