import fc from 'fast-check';
import { expect } from 'vitest';
import { createWorldRoles, pointer, type TestUser } from './access-world.ts';
import type { TestService } from './service.ts';

/**
 * The random worlds of the security property tests (security-property.test.ts checks the
 * explanations in them, impact-property.test.ts the impact preview). Each world has its own class,
 * role graph (role i may hold roles j > i: a DAG), CLP per operation (public, none,
 * requiresAuthentication, a user, a role, pointer fields, readUserFields / writeUserFields),
 * protectedFields groups and rows with random ACLs and owners, among USERS users.
 */

export const USERS = 4;
export const OPS = ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'] as const;
export type Op = (typeof OPS)[number];
const GRANTS = ['public', 'none', 'auth', 'user', 'role', 'pointer', 'absent'] as const;
export type Grant = { kind: (typeof GRANTS)[number]; user: number; role: number };
/** ACL entries by `*`, `u<user>` or `r<role>`. */
export type Acl = Array<{ who: string; read: boolean; write: boolean }>;
export type PfGroup = {
  pattern: 'star' | 'auth' | 'user' | 'role' | 'userField';
  who: number;
  fields: string[];
};
/** The fields a world's rows carry, that protectedFields may hide. */
export const DATA_FIELDS = ['s', 'v', 'owner'];

export interface ClpSpec {
  ops: Record<Op, Grant>;
  readUserFields: boolean;
  writeUserFields: boolean;
}
export interface WorldSpec {
  roles: Array<{ users: number[]; holds: number[] }>;
  clp: ClpSpec;
  protectedFields: PfGroup[];
  rows: Array<{ owner: number | null; acl: null | Acl }>;
}

const grantArb: fc.Arbitrary<Grant> = fc.record({
  kind: fc.constantFrom(...GRANTS),
  user: fc.nat(USERS - 1),
  role: fc.nat(2),
});
export const clpArb: fc.Arbitrary<ClpSpec> = fc.record({
  ops: fc.record(Object.fromEntries(OPS.map((op) => [op, grantArb])) as Record<Op, fc.Arbitrary<Grant>>),
  readUserFields: fc.boolean(),
  writeUserFields: fc.boolean(),
});
export const pfArb: fc.Arbitrary<PfGroup[]> = fc.array(
  fc.record({
    pattern: fc.constantFrom(
      'star' as const,
      'auth' as const,
      'user' as const,
      'role' as const,
      'userField' as const,
    ),
    who: fc.nat(3),
    fields: fc.subarray(DATA_FIELDS),
  }),
  { maxLength: 3 },
);
export const aclArb: fc.Arbitrary<Acl> = fc.array(
  fc.record({
    who: fc.constantFrom('*', 'u0', 'u1', 'u2', 'u3', 'r0', 'r1', 'r2'),
    read: fc.boolean(),
    write: fc.boolean(),
  }),
  { maxLength: 3 },
);
/** The arbitraries of a WorldSpec's fields, for a test's fc.record to extend. */
export const worldSpecArbs = {
  roles: fc.array(fc.record({ users: fc.subarray([0, 1, 2, 3]), holds: fc.subarray([0, 1, 2]) }), {
    maxLength: 3,
  }),
  clp: clpArb,
  protectedFields: pfArb,
  rows: fc.array(
    fc.record({ owner: fc.option(fc.nat(USERS - 1), { nil: null }), acl: fc.option(aclArb, { nil: null }) }),
    { minLength: 1, maxLength: 4 },
  ),
};

/** A world built in the service: its names, ids and the translations of its spec to REST bodies. */
export interface BuiltWorld {
  className: string;
  roleName: (i: number) => string;
  roleIds: string[];
  holds: number[][];
  uid: (u: number) => string;
  clpOf: (c: ClpSpec) => Record<string, unknown>;
  pfOf: (groups: PfGroup[]) => Record<string, string[]>;
  aclOf: (acl: Acl) => Record<string, { read: boolean; write: boolean }>;
  /** The class-level permissions the class was created with, protectedFields included. */
  clp: Record<string, unknown>;
  rowIds: string[];
}

/** Creates the world's roles, its class `className` (roles named `<rolePrefix>r<i>`) and its rows. */
export async function buildWorld(
  t: TestService,
  users: readonly TestUser[],
  spec: WorldSpec,
  className: string,
  rolePrefix: string,
): Promise<BuiltWorld> {
  const roleName = (i: number) => `${rolePrefix}r${i}`;
  const { roleIds, holds } = await createWorldRoles(
    t,
    spec.roles,
    users.map((u) => u.id),
    roleName,
  );
  const uid = (u: number) => users[u]!.id;
  const grant = (g: Grant): Record<string, unknown> | undefined => {
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
      case 'absent':
        return undefined;
    }
  };
  const clpOf = (c: ClpSpec): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const op of OPS) {
      const entry = grant(c.ops[op]);
      if (entry) out[op] = entry;
    }
    if (c.readUserFields) out.readUserFields = ['owner'];
    if (c.writeUserFields) out.writeUserFields = ['owner'];
    return out;
  };
  const pfOf = (groups: PfGroup[]): Record<string, string[]> => {
    const pf: Record<string, string[]> = {};
    for (const p of groups) {
      const pattern =
        p.pattern === 'star'
          ? '*'
          : p.pattern === 'auth'
            ? 'authenticated'
            : p.pattern === 'user'
              ? uid(p.who)
              : p.pattern === 'role'
                ? `role:${roleName(p.who % 3)}`
                : 'userField:owner';
      pf[pattern] = p.fields;
    }
    return pf;
  };
  const principalOf = (who: string) =>
    who === '*'
      ? '*'
      : who.startsWith('u')
        ? uid(Number(who.slice(1)))
        : `role:${roleName(Number(who.slice(1)))}`;
  const aclOf = (acl: Acl) => {
    const out: Record<string, { read: boolean; write: boolean }> = {};
    for (const e of acl) out[principalOf(e.who)] = { read: e.read, write: e.write };
    return out;
  };

  const clp = { ...clpOf(spec.clp), protectedFields: pfOf(spec.protectedFields) };
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
  const rowIds: string[] = [];
  for (const [i, r] of spec.rows.entries()) {
    const body: Record<string, unknown> = { v: i * 10, s: `s${i}` };
    if (r.owner !== null) body.owner = pointer('_User', uid(r.owner));
    if (r.acl) body.ACL = aclOf(r.acl);
    const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
    expect(res.status, res.text).toBe(201);
    rowIds.push(res.json.objectId);
  }
  return { className, roleName, roleIds, holds, uid, clpOf, pfOf, aclOf, clp, rowIds };
}
