import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aclCondition, decideAcl } from '../src/access/acl.ts';
import { decideClp } from '../src/access/class.ts';
import { MASTER, makeCaller } from '../src/kernel/caller.ts';
import { ctxOf } from '../src/kernel/context.ts';
import type { QueryNode } from '../src/kernel/query.ts';
import type { Row } from '../src/kernel/records.ts';
import { compileMatcher } from '../src/query/match.ts';
import { ON_POSTGRES, startService, type TestService } from './helpers/service.ts';

/**
 * One decider per access layer, compiled two ways: into a row condition that the store runs as
 * SQL, and into an in-memory check of one row. For random worlds (rows with random ACLs) and random
 * callers (a user, roles), both must pick exactly the same rows, for read and for write.
 */

const PRINCIPALS = ['*', 'u0', 'u1', 'u2', 'role:R0', 'role:R1', 'role:R2'] as const;

const aclArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant({}) },
  {
    weight: 6,
    arbitrary: fc.dictionary(
      fc.constantFrom(...PRINCIPALS),
      fc.record({ read: fc.boolean(), write: fc.boolean() }),
      { maxKeys: 4 },
    ),
  },
);

/** A generated ACL on the wire: entries with both flags false are absent, as the protocol sends them. */
function wireAcl(acl: Record<string, { read: boolean; write: boolean }>) {
  return Object.fromEntries(
    Object.entries(acl)
      .filter(([, p]) => p.read || p.write)
      .map(([k, p]) => [k, { ...(p.read ? { read: true } : {}), ...(p.write ? { write: true } : {}) }]),
  );
}

const callerArb = fc.record({
  user: fc.option(fc.constantFrom('u0', 'u1', 'u2', 'u3'), { nil: undefined }),
  roles: fc.subarray(['R0', 'R1', 'R2']),
});

describe('the ACL decider: SQL and in-memory agree on every row', () => {
  let t: TestService;
  let run = 0;

  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('for random worlds and callers, read and write', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(aclArb, { minLength: 1, maxLength: 12 }),
        fc.array(callerArb, { minLength: 1, maxLength: 5 }),
        async (acls, callers) => {
          const className = `World${run++}`;
          const ctx = ctxOf(MASTER, 'system');
          for (const [i, acl] of acls.entries()) {
            const body: Record<string, unknown> = { n: i };
            // Entries with both flags false are absent on the wire.
            if (acl !== null) {
              body.ACL = wireAcl(acl);
            }
            await t.service.data.writes.create(ctx, className, body);
          }
          const { store, schemas } = t.service.core;
          const schema = schemas.get(className)!;
          const all = await store.find(
            schema,
            { where: { type: 'and', children: [] }, order: [], limit: 1000, skip: 0 },
            schemas.lookup,
          );
          for (const c of callers) {
            const caller = makeCaller({
              user: c.user ? { objectId: c.user } : null,
              roles: c.user ? c.roles.map((name) => ({ name, via: null })) : [],
            });
            for (const access of ['read', 'write'] as const) {
              const where = aclCondition(caller, access) as QueryNode;
              const bySql = await store.find(
                schema,
                { where, order: [], limit: 1000, skip: 0 },
                schemas.lookup,
              );
              const inMemory = all.filter((row: Row) => decideAcl(row.ACL as never, caller, access).allowed);
              const ids = (rows: Row[]) => rows.map((r) => r.objectId as string).sort();
              expect(ids(bySql), `${access} as ${caller.principals.join(',')}`).toEqual(ids(inMemory));
              // A whole-class count is answered from the per-ACL counts the store keeps: the same rows.
              if (access === 'read') {
                expect(await store.count(schema, { where }, schemas.lookup)).toBe(inMemory.length);
              }
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('explains a grant through a role with the chain that holds it', () => {
    const caller = makeCaller({
      user: { objectId: 'u9' },
      roles: [
        { name: 'Staff', via: null },
        { name: 'Editors', via: 'Staff' },
        { name: 'Admins', via: 'Editors' },
      ],
    });
    const verdict = decideAcl({ 'role:Admins': { read: true } }, caller, 'read');
    expect(verdict).toMatchObject({ allowed: true, layer: 'acl', rule: 'acl.grant', entry: 'role:Admins' });
    expect(verdict.roleChain).toEqual(['Staff', 'Editors', 'Admins']);
    expect(verdict.reason).toBe("the row's ACL grants read to members of Admins");
    const refused = decideAcl({ u1: { read: true } }, caller, 'write');
    expect(refused).toMatchObject({
      allowed: false,
      layer: 'acl',
      rule: 'acl.none',
      code: 101,
      message: 'Object not found.',
    });
    expect(decideAcl(undefined, caller, 'write')).toMatchObject({ allowed: true, rule: 'acl.noAcl' });
    expect(decideAcl({}, caller, 'read')).toMatchObject({ allowed: false, rule: 'acl.none' });
  });
});

describe('the class decider with pointer permissions: its row condition, SQL and in-memory, agree', () => {
  let t: TestService;
  let run = 0;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  const user = (id: string) => ({ __type: 'Pointer', className: '_User', objectId: id });
  const ownerArb = fc.oneof(
    fc.constant(undefined),
    fc.constantFrom('u0', 'u1', 'u2').map(user),
    fc.subarray(['u0', 'u1', 'u2']).map((ids) => ids.map(user)),
  );

  it('for random rows (owner pointers or arrays of them, random ACLs) and callers, on every operation', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ owner: ownerArb, editor: ownerArb, acl: aclArb }), {
          minLength: 1,
          maxLength: 10,
        }),
        fc.array(callerArb, { minLength: 1, maxLength: 4 }),
        fc.constantFrom('find', 'get', 'count', 'update', 'delete'),
        async (rows, callers, op) => {
          const className = `Pointed${run++}`;
          const ctx = ctxOf(MASTER, 'system');
          await t.request('POST', `/schemas/${className}`, {
            as: 'master',
            body: {
              fields: { owner: { type: 'Array' }, editor: { type: 'Array' } },
              classLevelPermissions: {
                [op]: { pointerFields: ['owner'] },
                readUserFields: ['editor'],
                writeUserFields: ['editor'],
              },
            },
          });
          for (const r of rows) {
            const body: Record<string, unknown> = {};
            // Array fields hold one pointer or several: pointer permissions accept both.
            if (r.owner !== undefined) body.owner = Array.isArray(r.owner) ? r.owner : [r.owner];
            if (r.editor !== undefined) body.editor = Array.isArray(r.editor) ? r.editor : [r.editor];
            if (r.acl !== null) body.ACL = wireAcl(r.acl);
            await t.service.data.writes.create(ctx, className, body);
          }
          const { store, schemas } = t.service.core;
          const schema = schemas.get(className)!;
          const all = await store.find(
            schema,
            { where: { type: 'and', children: [] }, order: [], limit: 1000, skip: 0 },
            schemas.lookup,
          );
          for (const c of callers) {
            const caller = makeCaller({
              user: c.user ? { objectId: c.user } : null,
              roles: c.user ? c.roles.map((name) => ({ name, via: null })) : [],
            });
            const verdict = decideClp(schema, op, caller);
            if (!verdict.allowed) continue;
            const access = op === 'update' || op === 'delete' ? 'write' : 'read';
            const children = [
              aclCondition(caller, access)!,
              ...(verdict.condition ? [verdict.condition] : []),
            ];
            const where: QueryNode = { type: 'and', children };
            const bySql = await store.find(
              schema,
              { where, order: [], limit: 1000, skip: 0 },
              schemas.lookup,
            );
            const matcher = compileMatcher(where, schema);
            const ids = (list: Row[]) => list.map((r) => r.objectId as string).sort();
            expect(ids(bySql), `${op} as ${caller.principals.join(',')}`).toEqual(ids(all.filter(matcher)));
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe('the per-ACL counts follow every change to rows and their ACLs', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates, ACL changes, deletes, purge, and a class made before the counts existed', async () => {
    const { store, schemas } = t.service.core;
    const ctx = ctxOf(MASTER, 'system');
    const reader = makeCaller({ user: { objectId: 'u1' }, roles: [{ name: 'R', via: null }] });
    const readable = aclCondition(reader, 'read')!;
    const count = () => store.count(schemas.get('Counted')!, { where: readable }, schemas.lookup);
    const ids: string[] = [];
    for (const ACL of [
      { '*': { read: true } },
      { 'role:R': { read: true } },
      { u2: { read: true } },
      undefined,
    ]) {
      ids.push((await t.service.data.writes.create(ctx, 'Counted', ACL ? { ACL } : {})).objectId);
    }
    expect(await count()).toBe(3);
    await t.service.data.writes.update(ctx, 'Counted', ids[2]!, { ACL: { u1: { read: true } } });
    expect(await count()).toBe(4);
    await t.service.data.writes.update(ctx, 'Counted', ids[0]!, { ACL: {} });
    expect(await count()).toBe(3);
    await t.service.data.writes.delete(ctx, 'Counted', ids[1]!);
    expect(await count()).toBe(2);
    // A class from before the counts: its triggers and counts are made at the next start.
    const driver = (store as unknown as { driver: { exec(sql: string): Promise<void> } }).driver;
    // PostgreSQL names a trigger's table (SQLite's trigger names are unique in the database).
    const on = ON_POSTGRES ? ' ON "Counted"' : '';
    await driver.exec(
      `DROP TRIGGER "Counted:acl_count_insert"${on}; DROP TRIGGER "Counted:acl_count_delete"${on}; DROP TRIGGER "Counted:acl_count_update"${on}; DELETE FROM "_ACL_COUNT" WHERE class = 'Counted';`,
    );
    expect(await count()).toBe(0);
    await store.upgradeClass(schemas.get('Counted')!);
    expect(await count()).toBe(2);
    await t.service.data.writes.create(ctx, 'Counted', {});
    expect(await count()).toBe(3);
    await t.service.data.writes.purge(ctx, 'Counted');
    expect(await count()).toBe(0);
  });
});
