import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, createWorldRoles, pointer, type TestUser } from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Property test of the three access layers against a small reference model written here. Each
 * generated world has its own class, role graph (a DAG: role i may hold roles j > i), CLP,
 * protectedFields, rows with random ACLs and owners; random callers then run finds, gets, counts,
 * updates and deletes through the real service, and every answer is compared with the model.
 */

const USERS = 4;
const OPS = ['find', 'get', 'count', 'update', 'delete'] as const;
type Op = (typeof OPS)[number];
const GRANTS = ['public', 'none', 'auth', 'user', 'role', 'pointer'] as const;

interface World {
  roles: Array<{ users: number[]; holds: number[] }>;
  clp: Record<Op, { kind: (typeof GRANTS)[number]; user: number; role: number }>;
  readUserFields: boolean;
  writeUserFields: boolean;
  protectedFields: Array<{
    pattern: 'star' | 'auth' | 'user' | 'role' | 'userField';
    who: number;
    fields: string[];
  }>;
  rows: Array<{ owner: number | null; acl: null | Array<{ who: string; read: boolean; write: boolean }> }>;
  actions: Array<{ caller: number; op: Op; row: number; where: boolean; order: boolean }>;
}

const fieldsArb = fc.subarray(['s', 'v']);
const whoArb = fc.constantFrom('*', 'u0', 'u1', 'u2', 'u3', 'r0', 'r1', 'r2');
const worldArb: fc.Arbitrary<World> = fc.record({
  roles: fc.array(fc.record({ users: fc.subarray([0, 1, 2, 3]), holds: fc.subarray([0, 1, 2]) }), {
    maxLength: 3,
  }),
  clp: fc.record(
    Object.fromEntries(
      OPS.map((op) => [
        op,
        fc.record({ kind: fc.constantFrom(...GRANTS), user: fc.nat(USERS - 1), role: fc.nat(2) }),
      ]),
    ) as Record<Op, fc.Arbitrary<{ kind: (typeof GRANTS)[number]; user: number; role: number }>>,
  ),
  readUserFields: fc.boolean(),
  writeUserFields: fc.boolean(),
  protectedFields: fc.array(
    fc.record({
      pattern: fc.constantFrom(
        'star' as const,
        'auth' as const,
        'user' as const,
        'role' as const,
        'userField' as const,
      ),
      who: fc.nat(3),
      fields: fieldsArb,
    }),
    { maxLength: 3 },
  ),
  rows: fc.array(
    fc.record({
      owner: fc.option(fc.nat(USERS - 1), { nil: null }),
      acl: fc.option(
        fc.array(fc.record({ who: whoArb, read: fc.boolean(), write: fc.boolean() }), { maxLength: 3 }),
        {
          nil: null,
        },
      ),
    }),
    { minLength: 1, maxLength: 5 },
  ),
  // caller: 0..3 users, 4 anonymous, 5 master
  actions: fc.array(
    fc.record({
      caller: fc.nat(5),
      op: fc.constantFrom(...OPS),
      row: fc.nat(4),
      where: fc.boolean(),
      order: fc.boolean(),
    }),
    { minLength: 1, maxLength: 6 },
  ),
});

let t: TestService;
const users: TestUser[] = [];
let worldNo = 0;

beforeAll(async () => {
  t = await startService();
  for (let i = 0; i < USERS; i++) users.push(await createUser(t));
});
afterAll(async () => {
  await t?.close();
});

type Outcome = { status: number; body: unknown };

async function runWorld(w: World): Promise<void> {
  const k = worldNo++;
  const className = `Pw${k}`;
  const roleName = (i: number) => `W${k}r${i}`;
  const roleCount = w.roles.length;
  const { holds } = await createWorldRoles(
    t,
    w.roles,
    users.map((u) => u.id),
    roleName,
  );
  const uid = (u: number) => users[u]!.id;
  const roleExists = (r: number) => r < roleCount;
  // Effective roles: a user holds role i when it is in i's users or holds a role that i holds.
  const rolesOf = (u: number): Set<number> => {
    const held = new Set<number>();
    for (let i = roleCount - 1; i >= 0; i--) {
      if (w.roles[i]!.users.includes(u) || holds[i]!.some((j) => held.has(j))) held.add(i);
    }
    return held;
  };
  const grant = (g: World['clp'][Op]): Record<string, unknown> => {
    switch (g.kind) {
      case 'public':
        return { '*': true };
      case 'none':
        return {};
      case 'auth':
        return { requiresAuthentication: true };
      case 'user':
        return { [uid(g.user)]: true };
      case 'role':
        return { [`role:${roleName(g.role)}`]: true };
      case 'pointer':
        return { pointerFields: ['owner'] };
    }
  };
  const clp: Record<string, unknown> = Object.fromEntries(OPS.map((op) => [op, grant(w.clp[op])]));
  clp.create = {};
  clp.addField = {};
  if (w.readUserFields) clp.readUserFields = ['owner'];
  if (w.writeUserFields) clp.writeUserFields = ['owner'];
  const pf: Record<string, string[]> = {};
  const patternOf = (p: World['protectedFields'][number]) =>
    p.pattern === 'star'
      ? '*'
      : p.pattern === 'auth'
        ? 'authenticated'
        : p.pattern === 'user'
          ? uid(p.who)
          : p.pattern === 'role'
            ? `role:${roleName(p.who % 3)}`
            : 'userField:owner';
  for (const p of w.protectedFields) pf[patternOf(p)] = p.fields;
  clp.protectedFields = pf;
  const created = await t.request('POST', `/schemas/${className}`, {
    as: 'master',
    body: {
      className,
      fields: {
        owner: { type: 'Pointer', targetClass: '_User' },
        v: { type: 'Number' },
        s: { type: 'String' },
      },
      classLevelPermissions: clp,
    },
  });
  expect(created.status, created.text).toBe(200);

  // Rows, in the service and in the model.
  interface ModelRow {
    id: string;
    owner: number | null;
    v: number;
    s: string;
    read: Set<string> | null;
    write: Set<string> | null;
  }
  const principalOf = (who: string) =>
    who === '*'
      ? '*'
      : who.startsWith('u')
        ? uid(Number(who.slice(1)))
        : `role:${roleName(Number(who.slice(1)))}`;
  const model: ModelRow[] = [];
  for (const [i, r] of w.rows.entries()) {
    const body: Record<string, unknown> = { v: i * 10, s: `s${i}` };
    if (r.owner !== null) body.owner = pointer('_User', uid(r.owner));
    let read: Set<string> | null = null;
    let write: Set<string> | null = null;
    if (r.acl) {
      const acl: Record<string, { read?: boolean; write?: boolean }> = {};
      for (const e of r.acl) acl[principalOf(e.who)] = { read: e.read, write: e.write };
      body.ACL = acl;
      read = new Set(
        Object.entries(acl)
          .filter(([, p]) => p.read)
          .map(([p]) => p),
      );
      write = new Set(
        Object.entries(acl)
          .filter(([, p]) => p.write)
          .map(([p]) => p),
      );
    }
    const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
    expect(res.status, res.text).toBe(201);
    model.push({ id: res.json.objectId, owner: r.owner, v: i * 10, s: `s${i}`, read, write });
  }
  const allIds = model.map((m) => m.id);

  const denied = (status: number, code: number, error: string): Outcome => ({
    status,
    body: { code, error },
  });
  const notFound = denied(404, 101, 'Object not found.');
  let nextV = 1000;

  for (const a of w.actions) {
    const master = a.caller === 5;
    const user = a.caller < USERS ? a.caller : null;
    const principals = new Set(['*']);
    if (user !== null) {
      principals.add(uid(user));
      for (const r of rolesOf(user)) principals.add(`role:${roleName(r)}`);
    }
    const target = model[a.row % model.length];
    const targetId = target?.id ?? allIds[a.row % allIds.length]!;
    // CLP layer.
    const clpCheck = (op: Op): { ok: boolean; pointer: boolean; out?: Outcome } => {
      if (master) return { ok: true, pointer: false };
      const g = w.clp[op];
      if (g.kind === 'public') return { ok: true, pointer: false };
      if (g.kind === 'auth') {
        return user === null
          ? {
              ok: false,
              pointer: false,
              out: denied(404, 101, 'Permission denied, user needs to be authenticated.'),
            }
          : { ok: true, pointer: false };
      }
      if (g.kind === 'user' && user === g.user) return { ok: true, pointer: false };
      if (g.kind === 'role' && roleExists(g.role) && principals.has(`role:${roleName(g.role)}`))
        return { ok: true, pointer: false };
      const userFields = ['find', 'get', 'count'].includes(op) ? w.readUserFields : w.writeUserFields;
      if ((g.kind === 'pointer' || userFields) && user !== null) return { ok: true, pointer: true };
      return {
        ok: false,
        pointer: false,
        out: denied(400, 119, `Permission denied for action ${op} on class ${className}.`),
      };
    };
    const can = (m: ModelRow, access: 'read' | 'write', pointerCond: boolean) => {
      if (master) return true;
      if (pointerCond && (user === null || m.owner !== user)) return false;
      const set = access === 'read' ? m.read : m.write;
      return set === null || [...set].some((p) => principals.has(p));
    };
    // protectedFields layer.
    const staticLists: string[][] = [];
    const userFieldLists: string[][] = [];
    if (!master) {
      for (const [pattern, list] of Object.entries(pf)) {
        if (pattern === 'userField:owner') {
          if (user !== null) userFieldLists.push(list);
        } else if (
          pattern === '*' ||
          (pattern === 'authenticated' && user !== null) ||
          principals.has(pattern === '*' ? '' : pattern)
        ) {
          staticLists.push(list);
        }
      }
    }
    const intersect = (lists: string[][]) =>
      lists.length === 0 ? [] : lists[0]!.filter((f) => lists.every((l) => l.includes(f)));
    const hidden = (m: ModelRow) =>
      intersect(user !== null && m.owner === user ? [...staticLists, ...userFieldLists] : staticLists);
    const unqueryable = new Set(staticLists.length ? intersect(staticLists) : userFieldLists.flat());
    const view = (m: ModelRow) => {
      const out: Record<string, unknown> = { objectId: m.id, v: m.v, s: m.s };
      for (const f of hidden(m)) delete out[f];
      return out;
    };
    const creds = master
      ? { as: 'master' as const }
      : user !== null
        ? { sessionToken: users[user]!.token }
        : {};

    let expected: Outcome;
    let actual: Outcome;
    if (a.op === 'find' || a.op === 'count') {
      const query: Record<string, unknown> = {};
      if (a.where) query.where = { v: { $gte: 0 } };
      if (a.order) query.order = 'v';
      if (a.op === 'count') Object.assign(query, { count: 1, limit: 0 });
      const c = clpCheck(a.op);
      if (!c.ok) expected = c.out!;
      else if ((a.where || a.order) && unqueryable.has('v'))
        expected = denied(400, 119, `This user is not allowed to query v on class ${className}.`);
      else {
        const visible = model.filter((m) => can(m, 'read', c.pointer));
        if (a.order) visible.sort((x, y) => x.v - y.v);
        expected = {
          status: 200,
          body: a.op === 'count' ? { results: [], count: visible.length } : { results: visible.map(view) },
        };
      }
      const res = await t.request('GET', `/classes/${className}`, { ...creds, query });
      actual = { status: res.status, body: res.json };
      if (a.op === 'find' && res.status === 200) {
        actual.body = {
          results: res.json.results.map((r: Record<string, unknown>) =>
            Object.fromEntries(Object.entries(r).filter(([key]) => ['objectId', 'v', 's'].includes(key))),
          ),
        };
        if (!a.order) {
          const byId = (x: any, y: any) => (x.objectId < y.objectId ? -1 : 1);
          (actual.body as any).results.sort(byId);
          (expected.body as any).results?.sort(byId);
        }
      }
    } else if (a.op === 'get') {
      const c = clpCheck('get');
      if (!c.ok) expected = c.out!;
      else
        expected = target && can(target, 'read', c.pointer) ? { status: 200, body: view(target) } : notFound;
      const res = await t.request('GET', `/classes/${className}/${targetId}`, creds);
      actual = { status: res.status, body: res.json };
      if (res.status === 200)
        actual.body = Object.fromEntries(
          Object.entries(res.json).filter(([key]) => ['objectId', 'v', 's'].includes(key)),
        );
    } else {
      const c = clpCheck(a.op);
      const allowed = c.ok && target !== undefined && can(target, 'write', c.pointer);
      if (!c.ok) expected = c.out!;
      else expected = allowed ? { status: 200, body: 'ok' } : notFound;
      const v = nextV++;
      const res =
        a.op === 'update'
          ? await t.request('PUT', `/classes/${className}/${targetId}`, { ...creds, body: { v } })
          : await t.request('DELETE', `/classes/${className}/${targetId}`, creds);
      actual = { status: res.status, body: res.status === 200 ? 'ok' : res.json };
      if (allowed && target) {
        if (a.op === 'update') target.v = v;
        else model.splice(model.indexOf(target), 1);
      }
    }
    expect(actual, JSON.stringify({ world: k, action: a, clp, pf, roles: w.roles, holds })).toEqual(expected);
  }
}

describe('access layers against a reference model', () => {
  it('agrees on 200 random worlds', { timeout: 120_000 }, async () => {
    await fc.assert(fc.asyncProperty(worldArb, runWorld), { numRuns: 200 });
  });
});
