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
  name: z.string().regex(/^[0-9A-Za-z_\- ]{1,200}$/, 'must use letters, digits, spaces, _ and -'),
  ACL: acl.optional(),
  users: z.array(objectId).max(1000).optional(),
  roles: z.array(objectId).max(1000).optional(),
});
const usersBody = z.strictObject({ userIds: z.array(objectId).min(1).max(1000) });
const rolesBody = z.strictObject({ roleIds: z.array(objectId).min(1).max(1000) });

/** The members of a role: users, child roles (its `roles` relation) and the roles it is in. */
async function roleDetail(s: AppScope, roleId: string) {
  const role = unwrap(await s.client.get<Record<string, unknown>>('_Role', roleId, { useMasterKey: true }));
  const related = (key: string) => ({ $relatedTo: { object: pointer('_Role', roleId), key } });
  const [users, roles, all] = await Promise.all([
    s.client.find(
      '_User',
      { where: related('users'), limit: 1000, keys: 'username,email' },
      { useMasterKey: true },
    ),
    s.client.find('_Role', { where: related('roles'), limit: 1000, keys: 'name' }, { useMasterKey: true }),
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
