import { randomBytes } from 'node:crypto';
import { MASTER } from '../../src/kernel/caller.ts';
import { newObjectId } from '../../src/kernel/ids.ts';
import type { TestService } from './service.ts';

/**
 * Test fixtures for the access-control suites. Users and sessions are written through the write
 * pipeline with the master key (no password hashing, so fixtures stay fast): a _User row ACL'd to
 * itself and a _Session row whose token the service resolves like any other. Roles go through the
 * REST API with the master key.
 */
export interface TestUser {
  id: string;
  token: string;
  username: string;
}

export const pointer = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });

export async function createUser(t: TestService, username?: string): Promise<TestUser> {
  const { writes } = t.service.data;
  const ctx = { caller: MASTER, source: 'account' as const, context: {} };
  const id = newObjectId();
  const name = username ?? `u_${id.toLowerCase()}`;
  await writes.create(
    ctx,
    '_User',
    { username: name, ACL: { '*': { read: true }, [id]: { write: true } } },
    { objectId: id },
  );
  const token = `r:${randomBytes(16).toString('hex')}`;
  await writes.create(ctx, '_Session', {
    user: pointer('_User', id),
    sessionToken: token,
    expiresAt: { __type: 'Date', iso: new Date(Date.now() + 3_600_000).toISOString() },
    ACL: { [id]: { read: true, write: true } },
  });
  return { id, token, username: name };
}

/** A role through REST with the master key; `users` and `roles` are object ids. */
export async function createRole(
  t: TestService,
  name: string,
  members: { users?: string[]; roles?: string[] } = {},
): Promise<string> {
  const body: Record<string, unknown> = { name, ACL: { '*': { read: true } } };
  if (members.users?.length)
    body.users = { __op: 'AddRelation', objects: members.users.map((id) => pointer('_User', id)) };
  if (members.roles?.length)
    body.roles = { __op: 'AddRelation', objects: members.roles.map((id) => pointer('_Role', id)) };
  const res = await t.request('POST', '/roles', { as: 'master', body });
  if (res.status !== 201) throw new Error(`role ${name}: ${res.text}`);
  return res.json.objectId as string;
}

/**
 * Every operation open to the public, for a CLP that sets something else (protectedFields, user
 * fields): a saved CLP stores the operations it does not name as master-only.
 */
export const PUBLIC_OPERATIONS: Readonly<Record<string, { '*': true }>> = Object.freeze(
  Object.fromEntries(
    ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'].map((op) => [
      op,
      { '*': true as const },
    ]),
  ),
);

export async function setClp(t: TestService, className: string, clp: Record<string, unknown>): Promise<void> {
  const res = await t.request('PUT', `/schemas/${className}`, {
    as: 'master',
    body: { classLevelPermissions: clp },
  });
  if (res.status !== 200) throw new Error(`CLP of ${className}: ${res.text}`);
}

export async function createClass(
  t: TestService,
  className: string,
  fields: Record<string, unknown>,
  clp?: Record<string, unknown>,
): Promise<void> {
  const body: Record<string, unknown> = { className, fields };
  if (clp) body.classLevelPermissions = clp;
  const res = await t.request('POST', `/schemas/${className}`, { as: 'master', body });
  if (res.status !== 200 && res.status !== 201) throw new Error(`class ${className}: ${res.text}`);
}

export async function createRow(
  t: TestService,
  className: string,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
  if (res.status !== 201) throw new Error(`row of ${className}: ${res.text}`);
  return res.json.objectId as string;
}

/**
 * The roles of a random access world (the property tests), created through REST with the master
 * key, last first: role i has the users at `users` and holds the roles i + 1 + h for each h in
 * `holds` that exists. Answers the role ids and the holds actually made, by role index.
 */
export async function createWorldRoles(
  t: TestService,
  roles: ReadonlyArray<{ users: readonly number[]; holds: readonly number[] }>,
  userIds: readonly string[],
  roleName: (i: number) => string,
): Promise<{ roleIds: string[]; holds: number[][] }> {
  const holds = roles.map((r, i) =>
    [...new Set(r.holds.map((h) => i + 1 + h))].filter((j) => j < roles.length),
  );
  const roleIds: string[] = [];
  for (let i = roles.length - 1; i >= 0; i--) {
    const body: Record<string, unknown> = { name: roleName(i) };
    if (roles[i]!.users.length)
      body.users = {
        __op: 'AddRelation',
        objects: roles[i]!.users.map((u) => pointer('_User', userIds[u]!)),
      };
    if (holds[i]!.length)
      body.roles = { __op: 'AddRelation', objects: holds[i]!.map((j) => pointer('_Role', roleIds[j]!)) };
    const res = await t.request('POST', '/roles', { as: 'master', body });
    if (res.status !== 201) throw new Error(`role ${roleName(i)}: ${res.text}`);
    roleIds[i] = res.json.objectId as string;
  }
  return { roleIds, holds };
}

/** After writing role rows or join tables straight through the store. */
export const forgetRoles = (t: TestService) => t.service.callers.forgetAll();
