import { ROLE_NAME_PATTERN } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, bodyOf, hideCredentials, parse, unwrap } from './http.ts';
import { idOf, readRow } from './rows.ts';
import { acl, findQuery, objectId } from './schemas-edge.ts';

/** Roles scanned for the reverse `roles` relation (the roles a role belongs to). */
const PARENT_SCAN_LIMIT = 200;
const pointer = (className: string, id: string) => ({ __type: 'Pointer', className, objectId: id });

const createRoleBody = z.strictObject({
  // The protocol's role name; the length cap is the bff's own bound on what it forwards.
  name: z
    .string()
    .refine(
      (name) => name.length <= 200 && ROLE_NAME_PATTERN.test(name),
      'must use letters, digits, spaces, _ and -',
    ),
  ACL: acl.optional(),
  users: z.array(objectId).max(1000).optional(),
  roles: z.array(objectId).max(1000).optional(),
});
const usersBody = z.strictObject({ userIds: z.array(objectId).min(1).max(1000) });
const rolesBody = z.strictObject({ roleIds: z.array(objectId).min(1).max(1000) });

/** Roles drawn in the hierarchy (and scanned for effective members) at most. */
export const HIERARCHY_LIMIT = 500;
/** Users listed per role when collecting effective members. */
const MEMBERS_PER_ROLE = 1000;

type Named = { objectId: string; name: string };
const related = (roleId: string, key: 'users' | 'roles') => ({
  $relatedTo: { object: pointer('_Role', roleId), key },
});

/** The roles in `roleId`'s `roles` relation: they inherit `roleId`'s capabilities. */
async function inheritorsOf(s: AppScope, roleId: string): Promise<Named[]> {
  const res = await s.client.find<Named>(
    '_Role',
    { where: related(roleId, 'roles'), limit: HIERARCHY_LIMIT, keys: 'name', order: 'name' },
    { useMasterKey: true },
  );
  return unwrap(res).results;
}

/** The members of a role: users, child roles (its `roles` relation) and the roles it is in. */
async function roleDetail(s: AppScope, roleId: string) {
  const role = unwrap(await s.client.get<Record<string, unknown>>('_Role', roleId, { useMasterKey: true }));
  const [users, roles, all] = await Promise.all([
    s.client.find(
      '_User',
      { where: related(roleId, 'users'), limit: 1000, keys: 'username,email' },
      { useMasterKey: true },
    ),
    s.client.find(
      '_Role',
      { where: related(roleId, 'roles'), limit: 1000, keys: 'name' },
      { useMasterKey: true },
    ),
    s.client.find<{ objectId: string; name: string }>(
      '_Role',
      { limit: PARENT_SCAN_LIMIT, keys: 'name', order: 'name' },
      { useMasterKey: true },
    ),
  ]);
  // The service has no reverse relation query: ask each role whether its `roles` relation holds this one.
  const candidates = unwrap(all).results.filter((r) => r.objectId !== roleId);
  const holds = await Promise.all(
    candidates.map(async (r) => {
      const res = await s.client.find(
        '_Role',
        {
          where: { objectId: roleId, $relatedTo: { object: pointer('_Role', r.objectId), key: 'roles' } },
          limit: 0,
          count: true,
        },
        { useMasterKey: true },
      );
      return res.success && (res.data.count ?? 0) > 0;
    }),
  );
  const parents = candidates.filter((_, i) => holds[i]);
  return hideCredentials({
    role,
    users: unwrap(users).results,
    /** Roles in this role's `roles` relation: their members gain this role's capabilities. */
    roles: unwrap(roles).results,
    /** Roles whose `roles` relation holds this role: its members gain their capabilities. */
    parents,
  });
}

/**
 * The whole hierarchy: every role with its direct member count, and one edge per inheritance.
 * An edge `{from, to}` means capabilities flow from `from` to `to`: `to` is in `from`'s `roles`
 * relation, so members of `to` hold `from`'s capabilities ("to inherits capabilities from from").
 */
async function roleHierarchy(s: AppScope) {
  const all = unwrap(
    await s.client.find<Named>(
      '_Role',
      { limit: HIERARCHY_LIMIT, keys: 'name', order: 'name', count: true },
      { useMasterKey: true },
    ),
  );
  const roles = await Promise.all(
    all.results.map(async (r) => {
      const [users, inheritors] = await Promise.all([
        s.client.find(
          '_User',
          { where: related(r.objectId, 'users'), limit: 0, count: true },
          {
            useMasterKey: true,
          },
        ),
        inheritorsOf(s, r.objectId),
      ]);
      return { role: r, users: unwrap(users).count ?? 0, inheritors };
    }),
  );
  return {
    roles: roles.map((r) => ({ objectId: r.role.objectId, name: r.role.name, users: r.users })),
    edges: roles.flatMap((r) => r.inheritors.map((child) => ({ from: r.role.objectId, to: child.objectId }))),
    truncated: (all.count ?? 0) > all.results.length,
  };
}

/**
 * Everyone who holds a role: its own users and, transitively, the users of every role that
 * inherits from it. Each member comes with `via`, the chain of role names through which it holds
 * the role (its own role first, this role last); the shortest chain wins.
 */
async function effectiveMembers(s: AppScope, roleId: string) {
  const role = unwrap(await s.client.get<Named>('_Role', roleId, { useMasterKey: true }));
  const members = new Map<string, { user: Record<string, unknown>; via: string[] }>();
  const seen = new Set([roleId]);
  let level: Array<{ id: string; chain: string[] }> = [{ id: roleId, chain: [role.name] }];
  let truncated = false;
  // Breadth first, so a member reached through several chains keeps the shortest one.
  while (level.length > 0 && seen.size <= HIERARCHY_LIMIT) {
    const next: typeof level = [];
    for (const { id, chain } of level) {
      const [users, inheritors] = await Promise.all([
        s.client.find<Record<string, unknown>>(
          '_User',
          { where: related(id, 'users'), limit: MEMBERS_PER_ROLE, keys: 'username,email', order: 'username' },
          { useMasterKey: true },
        ),
        inheritorsOf(s, id),
      ]);
      const found = unwrap(users).results;
      if (found.length === MEMBERS_PER_ROLE) truncated = true;
      for (const user of found) {
        const userId = String(user.objectId);
        if (!members.has(userId)) members.set(userId, { user, via: chain });
      }
      for (const child of inheritors) {
        if (seen.has(child.objectId)) continue;
        seen.add(child.objectId);
        next.push({ id: child.objectId, chain: [child.name, ...chain] });
      }
    }
    level = next;
  }
  return hideCredentials({ role, results: [...members.values()], truncated });
}

/** Roles: list, get with members, create, delete, add/remove users, add/remove child roles. */
export function registerRoleRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/roles';

  const relationChange = (
    s: AppScope,
    key: 'users' | 'roles',
    op: 'AddRelation' | 'RemoveRelation',
    ids: string[],
  ) =>
    s.client.update(
      '_Role',
      idOf(s, 'roleId'),
      { [key]: { __op: op, objects: ids.map((id) => pointer(key === 'users' ? '_User' : '_Role', id)) } },
      { useMasterKey: true },
    );

  router.get(
    base,
    appRoute(ctx, {}, async (s) => {
      const q = parse(findQuery, s.req.query, 'query');
      return unwrap(await s.client.find('_Role', { order: 'name', ...q }, { useMasterKey: true }));
    }),
  );

  router.get(
    '/apps/:appId/role-hierarchy',
    appRoute(ctx, {}, async (s) => roleHierarchy(s)),
  );

  router.get(
    `${base}/:roleId/effective-members`,
    appRoute(ctx, {}, async (s) => effectiveMembers(s, idOf(s, 'roleId'))),
  );

  router.get(
    `${base}/:roleId`,
    appRoute(ctx, {}, async (s) => roleDetail(s, idOf(s, 'roleId'))),
  );

  router.post(
    base,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const body = parse(createRoleBody, bodyOf(s.req), 'role');
      const fields: Record<string, unknown> = { name: body.name, ACL: body.ACL ?? { '*': { read: true } } };
      if (body.users?.length)
        fields.users = { __op: 'AddRelation', objects: body.users.map((id) => pointer('_User', id)) };
      if (body.roles?.length)
        fields.roles = { __op: 'AddRelation', objects: body.roles.map((id) => pointer('_Role', id)) };
      const created = unwrap(
        await s.client.create<Record<string, unknown>>('_Role', fields, { useMasterKey: true }),
      );
      const id = String(created.objectId);
      s.audit('role.create', `_Role/${id}`, null, {
        ...(await readRow(s.client, '_Role', id)),
        users: body.users ?? [],
        roles: body.roles ?? [],
      });
      return created;
    }),
  );

  router.delete(
    `${base}/:roleId`,
    appRoute(ctx, { write: true }, async (s) => {
      const id = idOf(s, 'roleId');
      const before = await roleDetail(s, id);
      unwrap(await s.client.destroy('_Role', id, { useMasterKey: true }));
      s.audit('role.delete', `_Role/${id}`, before, null);
      return {};
    }),
  );

  const membership = (
    key: 'users' | 'roles',
    action: string,
    op: 'AddRelation' | 'RemoveRelation',
    idsOf: (s: AppScope) => string[],
  ) =>
    appRoute(ctx, { write: true }, async (s) => {
      const roleId = idOf(s, 'roleId');
      const ids = idsOf(s);
      const before = await roleDetail(s, roleId);
      unwrap(await relationChange(s, key, op, ids));
      const after = await roleDetail(s, roleId);
      const names = (d: typeof before) => d[key].map((r: Record<string, unknown>) => r.objectId);
      s.audit(action, `_Role/${roleId}`, { [key]: names(before) }, { [key]: names(after) });
      return after;
    });

  router.post(
    `${base}/:roleId/users`,
    membership(
      'users',
      'role.addUsers',
      'AddRelation',
      (s) => parse(usersBody, bodyOf(s.req), 'members').userIds,
    ),
  );
  router.delete(
    `${base}/:roleId/users/:userId`,
    membership('users', 'role.removeUser', 'RemoveRelation', (s) => [idOf(s, 'userId')]),
  );
  router.post(
    `${base}/:roleId/roles`,
    membership(
      'roles',
      'role.addRoles',
      'AddRelation',
      (s) => parse(rolesBody, bodyOf(s.req), 'child roles').roleIds,
    ),
  );
  router.delete(
    `${base}/:roleId/roles/:childId`,
    membership('roles', 'role.removeRole', 'RemoveRelation', (s) => [idOf(s, 'childId')]),
  );
}
