import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aclCondition } from '../src/access/acl.ts';
import { resolveForMemory } from '../src/data/resolve.ts';
import type { Caller } from '../src/kernel/caller.ts';
import type { QueryNode } from '../src/kernel/query.ts';
import type { Row } from '../src/kernel/records.ts';
import { compileMatcher } from '../src/query/match.ts';
import { parseWhere } from '../src/query/parse.ts';
import { createRole, createRow, createUser, pointer, type TestUser } from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Subqueries and $relatedTo cannot be decided for one row in memory: resolveForMemory answers them
 * with a store lookup under the caller's access rules. Matching in memory with the resolved where
 * (and the caller's ACL condition) must give exactly what a find as that caller gives.
 */
describe('wheres with subqueries, decided in memory as the caller', () => {
  let t: TestService;
  let alice: TestUser;
  let bob: TestUser;
  let rowsOfMember: Row[];
  /** Caller and result size of every comparison: the worlds must not be trivially empty. */
  const seen: Array<{ caller: string; size: number }> = [];

  beforeAll(async () => {
    t = await startService();
    alice = await createUser(t);
    bob = await createUser(t);
    await createRole(t, 'Coaches', { users: [alice.id] });
    const open = await createRow(t, 'Team', { name: 'open', ACL: { '*': { read: true } } });
    const coached = await createRow(t, 'Team', { name: 'coached', ACL: { 'role:Coaches': { read: true } } });
    const secret = await createRow(t, 'Team', { name: 'secret', ACL: {} });
    const teams = [open, coached, secret];
    for (let i = 0; i < 10; i++) {
      await createRow(t, 'Member', {
        label: ['open', 'coached', 'secret'][(i * 2) % 3],
        team: pointer('Team', teams[i % 3]!),
        ACL: i % 4 === 0 ? { [bob.id]: { read: true } } : { '*': { read: true } },
      });
    }
    await t.request('PUT', `/classes/Team/${open}`, {
      as: 'master',
      body: {
        roster: { __op: 'AddRelation', objects: [pointer('_User', alice.id), pointer('_User', bob.id)] },
      },
    });
    const schema = t.service.core.schemas.get('Member')!;
    rowsOfMember = await t.service.core.store.find(
      schema,
      { where: { type: 'and', children: [] }, order: [], limit: 100, skip: 0 },
      t.service.core.schemas.lookup,
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  const WHERES: Array<Record<string, unknown>> = [
    { team: { $inQuery: { className: 'Team', where: {} } } },
    { team: { $notInQuery: { className: 'Team', where: { name: 'open' } } } },
    { label: { $select: { query: { className: 'Team', where: {} }, key: 'name' } } },
    {
      label: { $dontSelect: { query: { className: 'Team', where: { name: { $ne: 'open' } } }, key: 'name' } },
    },
    { $or: [{ team: { $inQuery: { className: 'Team', where: { name: 'coached' } } } }, { label: 'secret' }] },
  ];

  const callers = (): Array<[string, TestUser | undefined]> => [
    ['alice (a coach)', alice],
    ['bob', bob],
    ['anonymous', undefined],
  ];

  for (const where of WHERES) {
    it(`${JSON.stringify(where)}`, async () => {
      const schema = t.service.core.schemas.get('Member')!;
      for (const [name, user] of callers()) {
        const rest = await t.request('GET', '/classes/Member', {
          query: { where, limit: 100 },
          sessionToken: user?.token,
        });
        expect(rest.status, rest.text).toBe(200);
        const caller: Caller = await (user
          ? t.service.callers.resolve({ master: false, sessionToken: user.token })
          : t.service.callers.resolve({ master: false }));
        const resolved = await resolveForMemory(t.service.core, caller, schema, parseWhere(where));
        const node: QueryNode = { type: 'and', children: [resolved, aclCondition(caller, 'read')!] };
        const inMemory = rowsOfMember
          .filter(compileMatcher(node, schema))
          .map((r) => r.objectId)
          .sort();
        const bySql = rest.json.results.map((r: Row) => r.objectId).sort();
        expect(inMemory, name).toEqual(bySql);
        seen.push({ caller: name, size: bySql.length });
      }
    });
  }

  it('the comparisons above were not trivial: callers saw different, non-empty answers', () => {
    expect(Math.max(...seen.map((s) => s.size))).toBeGreaterThan(2);
    for (const who of ['alice (a coach)', 'bob', 'anonymous']) {
      expect(new Set(seen.filter((s) => s.caller === who).map((s) => s.size)).size, who).toBeGreaterThan(1);
    }
  });

  it('refuses what the SQL path refuses, with the same 102', async () => {
    const schema = t.service.core.schemas.get('Member')!;
    const caller = await t.service.callers.resolve({ master: false, sessionToken: alice.token });
    for (const where of [
      { label: { $inQuery: { className: 'Team', where: {} } } },
      { label: { $select: { query: { className: 'Team', where: {} }, key: 'name.length' } } },
    ]) {
      const rest = await t.request('GET', '/classes/Member', { query: { where }, sessionToken: alice.token });
      expect(rest.status).toBe(400);
      await expect(resolveForMemory(t.service.core, caller, schema, parseWhere(where))).rejects.toMatchObject(
        {
          code: 102,
          message: rest.json.error,
        },
      );
    }
  });

  it('$relatedTo: the owner must be readable, then its relation answers', async () => {
    const users = t.service.core.schemas.get('_User')!;
    const allUsers = await t.service.core.store.find(
      users,
      { where: { type: 'and', children: [] }, order: [], limit: 100, skip: 0 },
      t.service.core.schemas.lookup,
    );
    const team = (
      await t.request('GET', '/classes/Team', { as: 'master', query: { where: { name: 'open' } } })
    ).json.results[0].objectId;
    const where = { $relatedTo: { object: pointer('Team', team), key: 'roster' } };
    const caller = await t.service.callers.resolve({ master: false, sessionToken: bob.token });
    const resolved = await resolveForMemory(t.service.core, caller, users, parseWhere(where));
    const inMemory = allUsers
      .filter(compileMatcher(resolved, users))
      .map((r) => r.objectId)
      .sort();
    expect(inMemory).toEqual([alice.id, bob.id].sort());
  });
});
